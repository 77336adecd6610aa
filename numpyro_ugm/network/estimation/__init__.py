"""Estimating an ERGM: the MPLE, the Monte Carlo MLE loop and its step, termination rules
and trust region, standard errors, the log-likelihood, exact dyad-independent fits and the
paths for large sparse networks."""
