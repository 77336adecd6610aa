"""Sampling networks: chains of sparse networks, the tie / no-tie Metropolis–Hastings step
(JAX and compiled; its proposal probabilities and ratio paired in ``proposals``) and the
simulator that every fit, standard error and goodness of fit draws from. Reads the
terms (:mod:`numpyro_ugm.network.terms`); the terms never import it."""
