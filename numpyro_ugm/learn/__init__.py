"""Learning: the functional core of one update (:mod:`.core`) and the ``MLE`` driver that
runs it over minibatches (:mod:`.mle`)."""

from .core import LearnerCore, LearnState
from .mle import MLE, NonFiniteError, PreparedBatch, RunResult

__all__ = ["MLE", "LearnerCore", "LearnState", "NonFiniteError", "PreparedBatch",
           "RunResult"]
