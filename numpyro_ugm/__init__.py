"""numpyro_ugm: learning undirected graphical models with numpyro.

See ``DESIGN.md`` for the architecture; the names below are the public contract.
"""

from . import checkpoint, infer, kernels, models
from .domains import Binary, Categorical, Spin
from .evaluate import ais, exact, pseudo_log_likelihood
from .estimators import CD, MCMCMLE, PCD, PF, PSMC, SMC
from .learn import MLE, LearnState, NonFiniteError, RunResult
from .model import UGM
from .predict import Prediction, predict
from .sampling import sample

__version__ = "0.1.0"
__all__ = ["checkpoint", "infer", "Binary", "Categorical", "Spin", "UGM", "kernels", "models", "CD", "PCD", "MCMCMLE",
           "PF", "SMC", "PSMC", "MLE",
           "LearnState", "NonFiniteError", "RunResult", "predict", "Prediction", "sample", "ais", "exact",
           "pseudo_log_likelihood"]
