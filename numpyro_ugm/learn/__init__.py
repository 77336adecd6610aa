"""Learning: the functional core of one update (:mod:`.core`), the ``MLE`` driver that
runs it over minibatches (:mod:`.mle`; its set-up on the data in :mod:`.setup`, the
compiled steps in :mod:`.steps`, the diagnostics kept across runs in :mod:`.diagnostics`),
iterate averaging for constant-rate optimizers (:mod:`.averaging`), and the
deterministic fits: exact maximum likelihood for small models (:mod:`.exact_fit`; the
same exact negative phase as an estimator of ``MLE``, :mod:`.exact_estimator`) and
maximum pseudo-likelihood (:mod:`.pseudo`), set up in :mod:`.fit_setup`."""

from .averaging import AveragedState, averaged
from .core import LearnerCore, LearnState, StepInfo
from .exact_estimator import Exact, ExactInfo
from .exact_fit import ExactFitResult, fit_exact
from .mle import MLE, NonFiniteError, PreparedBatch, RunResult
from .pseudo_fit import PseudoFitResult, fit_pseudo_likelihood

__all__ = ["AveragedState", "averaged", "MLE", "LearnerCore", "LearnState", "NonFiniteError",
           "PreparedBatch", "RunResult", "StepInfo", "fit_exact", "ExactFitResult", "Exact",
           "ExactInfo",
           "fit_pseudo_likelihood", "PseudoFitResult"]
