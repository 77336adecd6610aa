"""The ready-made models (numpyro_ugm.models): where their names live. (ERGMs:
test_models_ergm.py.)"""

import importlib
import pkgutil


import numpyro_ugm as ugm
from numpyro_ugm import models


def test_no_function_hides_a_module():
    """Every module of the package keeps its name as an attribute (no function of the
    same name replaces it), and every documented name is importable from
    ``numpyro_ugm.models``."""
    for info in pkgutil.iter_modules(models.__path__):
        module = importlib.import_module(f"numpyro_ugm.models.{info.name}")
        assert getattr(models, info.name) is module, info.name
    for name in models.__all__:
        assert getattr(models, name) is not None
    for name in ("rbm", "vbm", "grid_crf", "multilabel_crf", "ergm", "mple",
                 "ergm_statistics", "change_statistics", "graph_to_edges"):
        assert callable(getattr(ugm.models, name)), name
