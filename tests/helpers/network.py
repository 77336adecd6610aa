"""ERGMs on a few nodes: statistics by brute force and an exact MLE."""

import functools
import itertools
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import exact
from numpyro_ugm.datasets import networks
from numpyro_ugm.models import ergm


#: the folder of statnet's networks shipped inside the package (``flomarriage.npz``, ...)
STATNET = Path(networks.__file__).parent / "statnet"

TRIAD = ("edges", "twostars", "triangles")


def brute_statistics(A, decay=0.5):
    """The statistics from their definitions (loops over nodes and triples)."""
    n = len(A)
    d = A.sum(1)
    r = 1 - math.exp(-decay)
    triangles = sum(A[i, j] * A[j, k] * A[i, k]
                    for i, j, k in itertools.combinations(range(n), 3))
    shared = {(i, j): sum(A[i, k] * A[j, k] for k in range(n))
              for i, j in itertools.combinations(range(n), 2)}
    return {"edges": A.sum() / 2,
            "twostars": sum(math.comb(int(x), 2) for x in d),
            "threestars": sum(math.comb(int(x), 3) for x in d),
            "triangles": triangles,
            "isolates": int(np.sum(d == 0)),
            "gwesp": math.exp(decay) * sum(1 - r ** s for (i, j), s in shared.items()
                                           if A[i, j]),
            "gwdegree": math.exp(decay) * sum(1 - r ** int(x) for x in d)}


_MODELS = {}


def ergm_model(n, statistics):
    """One traced UGM per (n, statistics), shared by the tests (structure analysis and
    compiled functions are cached on it)."""
    key = (n, tuple(statistics))
    if key not in _MODELS:
        _MODELS[key] = ugm.UGM(ergm, n, tuple(statistics))
    return _MODELS[key]


@functools.lru_cache(maxsize=None)
def triad6_problem_data():
    """500 graphs on 6 nodes from the triad ERGM at a known θ and their exact MLE."""
    n, theta_true = 6, jnp.array([-1.0, 0.15, 0.4])
    m = ergm_model(n, TRIAD)
    data = exact.sample(m, {"theta": theta_true}, jax.random.PRNGKey(11), 500)
    density = float(np.mean(data["y"]))
    assert 0.15 < density < 0.85  # not degenerate
    best = ugm.fit_exact(m, data, num_steps=200, tol=1e-5)
    assert best.converged
    return m, theta_true, data, best
