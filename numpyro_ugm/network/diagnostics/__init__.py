"""Checking a fitted ERGM: goodness of fit on network distributions, as statnet's ``gof()``,
and MCMC diagnostics of the sampled statistics."""
