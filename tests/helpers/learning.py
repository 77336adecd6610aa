"""A small learning problem: spin data and a learner factory."""

import numpy as np
import optax

import numpyro_ugm as ugm


def spins_data():
    """40 random ±1 rows of 6 spins (the learner's small data set)."""
    rng = np.random.default_rng(0)
    return {"x": rng.choice(np.array([-1, 1], np.int8), size=(40, 6))}


def make(k=1, lr=0.05, model=ugm.models.vbm):
    """MLE of the spin VBM (or ``model``) with PCD-k (32 particles) and SGD."""
    return ugm.MLE(model, ugm.PCD(32, num_mcmc_steps=k), optax.sgd(lr))
