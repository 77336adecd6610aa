"""Learning: the functional core of one update (:mod:`.core`), the ``MLE`` driver that
runs it over minibatches (:mod:`.mle`; tracing and data checks in :mod:`.setup`, the
compiled steps in :mod:`.steps`, the diagnostics kept across runs in :mod:`.diagnostics`),
and iterate averaging for constant-rate optimizers (:mod:`.averaging`)."""

from .averaging import AveragedState, averaged
from .core import LearnerCore, LearnState, StepInfo
from .mle import MLE, NonFiniteError, PreparedBatch, RunResult

__all__ = ["AveragedState", "averaged", "MLE", "LearnerCore", "LearnState", "NonFiniteError",
           "PreparedBatch", "RunResult", "StepInfo"]
