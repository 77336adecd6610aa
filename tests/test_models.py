"""The ready-made models (numpyro_ugm.models): where their names live, and the Gibbs
blocks they declare, checked against the structure analysis of the same potentials and
against exact enumeration. (ERGMs: network/test_ergm_model.py.)"""

import importlib
import itertools
import pkgutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.primitives import Messenger

import numpyro_ugm as ugm
import numpyro_ugm.model.analysis
from numpyro_ugm import models
from numpyro_ugm.model.factors import COLORS
from numpyro_ugm.models import image_features


class forget_colors(Messenger):
    """The model with its declared colourings dropped: the same potential, analysed."""

    def process_message(self, msg):
        if msg.get("infer") and COLORS in msg["infer"]:
            msg["infer"] = {k: v for k, v in msg["infer"].items() if k != COLORS}


def _grid_features():
    y = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    return image_features(y)


CASES = {
    "rbm": (models.rbm, lambda: ((5, 4), {})),
    "rbm-square": (models.rbm, lambda: ((4, 4), {})),
    "vbm": (models.vbm, lambda: ((6,), {})),
    "vbm-binary": (models.vbm, lambda: ((5,), {"domain": "binary", "fields": False})),
    "grid_crf": (models.grid_crf, lambda: (_grid_features(), {})),
    "multilabel_crf": (models.multilabel_crf, lambda: ((np.ones(3, np.float32), 4), {})),
}


def test_no_function_hides_a_module():
    """Every module of the package keeps its name as an attribute of its package (no
    function of the same name replaces it), and every documented name of
    ``numpyro_ugm.models`` and ``numpyro_ugm.network`` is importable."""
    for info in pkgutil.walk_packages(ugm.__path__, "numpyro_ugm."):
        module = importlib.import_module(info.name)
        parent, _, name = info.name.rpartition(".")
        assert getattr(importlib.import_module(parent), name) is module, info.name
    for name in models.__all__:
        assert getattr(models, name) is not None
    for name in ("rbm", "vbm", "grid_crf", "multilabel_crf", "ergm"):
        assert callable(getattr(ugm.models, name)), name
    for name in ("ergm", "mple", "fit_ergm", "ergm_statistics", "change_statistics",
                 "graph_to_edges"):
        assert callable(getattr(ugm.network, name)), name


@pytest.mark.parametrize("case", list(CASES))
def test_declared_blocks_are_the_analysed_ones(case):
    fn, arguments = CASES[case]
    args, kwargs = arguments()
    declared = ugm.UGM(fn, *args, **kwargs)
    analysed = ugm.UGM(forget_colors(fn), *args, **kwargs)
    d, a = declared.target().structure, analysed.target().structure
    assert a.edges is not None and (d.edges is None or d.edges.size == 0)
    assert d.multilinear and a.multilinear
    np.testing.assert_array_equal(d.colors, a.colors)
    assert len(d.blocks) == len(a.blocks)
    for bd, ba in zip(d.blocks, a.blocks):
        assert bd.keys() == ba.keys()
        for site in bd:
            if ba[site] is None:
                assert bd[site] is None
            else:
                np.testing.assert_array_equal(bd[site], ba[site])
    sites = list(declared.target().state_sites)
    for r in range(1, len(sites) + 1):
        for subset in itertools.combinations(sites, r):
            assert d.independent(subset) == a.independent(subset), subset
    # the same numbers: log Z by enumeration (which sums out a colour class) and the
    # free energy with the RBM's hidden layer summed out
    params = declared.init_params(jax.random.PRNGKey(1))
    params = {n: v + 0.3 * jax.random.normal(jax.random.PRNGKey(2), jnp.shape(v))
              for n, v in params.items()}
    np.testing.assert_array_equal(ugm.exact.log_partition(declared, params),
                                  ugm.exact.log_partition(analysed, params))
    if fn is models.rbm:
        x = declared.target().reference_state()
        mine, theirs = declared.observe(["v"]).target(), analysed.observe(["v"]).target()
        np.testing.assert_array_equal(mine.free_energy(params, x),
                                      theirs.free_energy(params, x))


def test_large_models_run_no_analysis(monkeypatch):
    """The ready-made models with a known structure never call the analysis (one
    Hessian probe per variable: an RBM 2000 × 2000 took about 100 s and 2.8 GB)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the structure analysis ran")

    monkeypatch.setattr(numpyro_ugm.model.analysis, "analyze", refuse)
    # sizes where the analysis would take seconds; the refusal above is what is checked
    # (the 600 x 400 RBM of the docstring took 10 s of the default suite to build)
    m = ugm.UGM(models.rbm, 120, 80)
    assert m.target().blocks == [{"v": None}, {"h": None}]
    assert m.target().structure.independent(["h"]) and not m.target().structure.independent(["v", "h"])
    assert len(ugm.UGM(models.vbm, 60).target().blocks) == 60
    node, edge = image_features(np.zeros((12, 16), np.float32))
    blocks = ugm.UGM(models.grid_crf, node, edge).target().blocks
    rows, cols = np.divmod(np.arange(192), 16)
    np.testing.assert_array_equal(blocks[0]["x"], np.flatnonzero((rows + cols) % 2 == 0))
    np.testing.assert_array_equal(blocks[1]["x"], np.flatnonzero((rows + cols) % 2 == 1))
