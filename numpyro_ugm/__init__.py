"""numpyro_ugm: learning undirected graphical models with numpyro.

The layers and the data flow are described in the documentation's architecture page
(``docs/architecture.md``); the names below are the public contract.
"""

from . import estimators, infer, kernels, models, posterior
from .domains import Binary, Categorical, Real, Spin
from .estimators import CD, MCMCMLE, PCD, PF, PSMC, SMC
from .evaluate import ais, exact, pseudo_log_likelihood, quadrature
from .learn import (AveragedState, Exact, ExactFitResult, LearnerCore, LearnState, MLE,
                    NonFiniteError, PseudoFitResult, RunResult, averaged, fit_exact,
                    fit_pseudo_likelihood)
from .model import UGM, as_ugm
from .model.factors import factor
from .prediction import Prediction, predict
from .runtime import checkpoint, distributed
from .sampling import sample

__version__ = "0.1.0"


def __getattr__(name):
    """``ugm.network`` on first use: the network analysis (numba, networkx) is imported
    only by those who use it, so that the core imports without them."""
    if name == "network":
        import importlib

        return importlib.import_module(".network", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["checkpoint", "distributed", "estimators", "infer", "kernels", "models", "network", "posterior", "Binary", "Categorical",
           "Real", "Spin", "UGM", "as_ugm", "factor", "CD", "PCD", "MCMCMLE", "PF", "SMC", "PSMC", "Exact", "MLE",
           "averaged", "AveragedState",
           "LearnerCore", "LearnState", "NonFiniteError", "RunResult", "predict",
           "Prediction", "sample", "ais", "exact", "quadrature", "pseudo_log_likelihood",
           "fit_exact", "ExactFitResult", "fit_pseudo_likelihood", "PseudoFitResult"]
