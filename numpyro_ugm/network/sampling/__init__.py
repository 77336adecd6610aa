"""Sampling networks: chains of sparse networks, the tie / no-tie Metropolis–Hastings step
(JAX and compiled) and the simulator that every fit, standard error and goodness of fit
draws from."""
