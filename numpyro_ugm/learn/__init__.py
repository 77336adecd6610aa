"""Learning: the functional core of one update (:mod:`.core`) and the ``MLE`` driver that
runs it over minibatches (:mod:`.mle`), and iterate averaging for constant-rate optimizers
(:mod:`.averaging`)."""

from .averaging import AveragedState, averaged
from .core import LearnerCore, LearnState
from .mle import MLE, NonFiniteError, PreparedBatch, RunResult

__all__ = ["AveragedState", "averaged", "MLE", "LearnerCore", "LearnState", "NonFiniteError",
           "PreparedBatch", "RunResult"]
