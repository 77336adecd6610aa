"""Every setting of an ERGM fit in one checked object, as statnet's ``control.ergm()``.

:class:`ErgmControl` holds the sampling settings (:class:`SamplingControl`: statnet's
``MCMC.*`` words ``burnin``, ``interval``, ``samplesize``, the chains, the sampler and
the size limits), the Monte Carlo MLE's (:class:`MCMLEControl`: statnet's ``MCMLE.*``:
iterations, termination rule, trust region, step length, tolerances, the final sample
and the log-likelihood's bridges) and the start (``init``, ``mple_samplesize``, or another
estimator). All are frozen; every value is checked when the object is made, with an
error naming the setting. The defaults are :func:`~numpyro_ugm.network.fit_ergm`'s::

    control = ErgmControl(sampling=SamplingControl(samplesize=2048, interval=2048),
                          mcmle=MCMLEControl(termination="hotelling"))
    fit = fit_ergm(graph, "edges + triangle", control=control)

``dataclasses.replace(control.sampling, burnin=...)`` derives a changed copy (checked
again).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..runtime.checks import check_count
from ..estimators.base import Estimator

__all__ = ["ErgmControl", "SamplingControl", "MCMLEControl", "SAMPLERS", "TERMINATIONS",
           "METRICS"]

#: the samplers of :attr:`SamplingControl.sampler`
SAMPLERS = ("auto", "sparse", "gibbs")
#: the rules of :attr:`MCMLEControl.termination`
TERMINATIONS = ("confidence", "hotelling", "none")
#: the approximations of :attr:`MCMLEControl.metric`
METRICS = ("lognormal", "naive")


def _count(owner, name, value, minimum=1, optional=False):
    """``value`` as an int >= ``minimum`` (None passes when ``optional``)."""
    if optional and value is None:
        return None
    return check_count(owner, name, value, minimum=minimum)


def _number(owner, name, value, low=0.0, high=math.inf, closed_low=False, closed_high=False,
            optional=False):
    """``value`` as a finite float inside (low, high) (ends closed on request; None
    passes when ``optional``)."""
    if optional and value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}") from error
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}")
    inside = ((v >= low if closed_low else v > low) and (v <= high if closed_high else v < high))
    if not math.isfinite(v) or not inside:
        lo, hi = ("[" if closed_low else "("), ("]" if closed_high else ")")
        raise ValueError(f"{owner}: {name} must lie in {lo}{low:g}, {high:g}{hi}, got "
                         f"{value!r}")
    return v


def _choice(owner, name, value, choices):
    """Refuse a ``value`` not among ``choices``."""
    if value not in choices:
        raise ValueError(f"{owner}: {name} must be one of {choices}, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class SamplingControl:
    """How the chains of a fit are run (statnet's ``control.ergm(MCMC.*)``).

    Attributes
    ----------
    sampler : {"auto", "sparse", "gibbs"}
        Tie / no-tie Metropolis–Hastings on neighbour lists, or dense block Gibbs;
        ``"auto"``: the sparse sampler when it runs compiled (every term built in), else
        Gibbs for networks of at most ``dense_limit`` dyads.
    num_chains : int
        Chains run side by side (4).
    samplesize : int
        Draws per simulation over all chains (ergm's ``MCMC.samplesize``, 1024); a
        multiple of ``num_chains`` (each chain draws ``samplesize / num_chains``).
    interval : int, optional
        Steps between draws (ergm's ``MCMC.interval``): proposals (sparse; default 1024)
        or sweeps (Gibbs; default enough sweeps for about 1024 dyad updates).
    burnin : int, optional
        Steps run after each change of θ before drawing (ergm's ``MCMC.burnin``; default
        16 intervals, growing with the interval).
    effective_size : float or None
        ergm's ``MCMC.effectiveSize`` (64): a sample whose multivariate effective size
        falls short is drawn again with a doubled interval, up to ``max_interval``;
        None: a fixed interval. Needs ``samplesize >= 2 effective_size``.
    max_interval : int, optional
        The longest interval the adaptive sample reaches (default 1024 intervals).
    density_guard : float or None
        ergm's ``MCMLE.density.guard`` (e³ ≈ 20.1): when a sample falls short of
        ``effective_size`` and a chain holds more than max(``density_guard_min``,
        ``density_guard`` × the observed ties) ties, the chains ran away to dense
        graphs (a degenerate θ) and the fit stops with
        :class:`~numpyro_ugm.network.ErgmDegeneracyError` instead of doubling its
        interval towards ``max_interval`` (faux.mesa.high ``edges + triangle + kstar(2)
        + gwesp(0.5, fixed=TRUE) + isolates``: an error after about 30 s instead of
        hours); None: no guard.
    density_guard_min : int
        ergm's ``MCMLE.density.guard.min`` (10,000): the guard never fires below this
        many ties (nor on networks of fewer dyads).
    max_degree : int, optional
        Degree capacity of the sparse sampler's neighbour lists.
    triadic : float, optional
        Share in [0, 1) of the sparse sampler's proposals that are triadic (default 0.5
        for models with a triangle, triple or shared-partner term, else 0); sparse only.
    threads : int, optional
        Threads running the sparse sampler's chains in groups (default: the cores); the
        fit does not depend on it.
    native : bool, optional
        The sparse sampler compiled by numba (True), in JAX (False), or compiled when
        every term is built in (None).
    dense_limit : int
        ``sampler="auto"`` takes Gibbs up to this many dyads when the sparse sampler
        cannot run compiled (500).
    sparse_limit : int
        ``mple_samplesize="auto"`` takes the edge-list path (no (n, n) array) above this
        many dyads (2^17, about 510 nodes undirected).
    dyad_draws_limit : int
        The most dyads :func:`~numpyro_ugm.network.gof_ergm` draws one by one for a
        dyad-independent fit (2^21).
    """

    sampler: str = "auto"
    num_chains: int = 4
    samplesize: int = 1024
    interval: int | None = None
    burnin: int | None = None
    effective_size: float | None = 64
    max_interval: int | None = None
    density_guard: float | None = math.exp(3)
    density_guard_min: int = 10000
    max_degree: int | None = None
    triadic: float | None = None
    threads: int | None = None
    native: bool | None = None
    dense_limit: int = 500
    sparse_limit: int = 2 ** 17
    dyad_draws_limit: int = 2 ** 21

    def __post_init__(self):
        owner = "SamplingControl"
        put = object.__setattr__
        _choice(owner, "sampler", self.sampler, SAMPLERS)
        for name in ("num_chains", "samplesize", "dense_limit", "sparse_limit",
                     "dyad_draws_limit"):
            put(self, name, _count(owner, name, getattr(self, name)))
        for name in ("interval", "max_interval", "max_degree", "threads"):
            put(self, name, _count(owner, name, getattr(self, name), optional=True))
        put(self, "burnin", _count(owner, "burnin", self.burnin, minimum=0, optional=True))
        put(self, "density_guard", _number(owner, "density_guard", self.density_guard,
                                           low=1.0, optional=True))
        put(self, "density_guard_min", _count(owner, "density_guard_min",
                                              self.density_guard_min, minimum=0))
        put(self, "effective_size", _number(owner, "effective_size", self.effective_size,
                                            optional=True))
        if self.triadic is not None:
            try:
                triadic = float(self.triadic)
            except (TypeError, ValueError):
                triadic = float("nan")
            if not 0.0 <= triadic < 1.0:
                raise ValueError(f"{owner}: triadic must be a probability in [0, 1), got "
                                 f"{self.triadic!r}")
            put(self, "triadic", triadic)
        if self.native is not None and not isinstance(self.native, (bool, np.bool_)):
            raise TypeError(f"{owner}: native must be None, True or False, got "
                            f"{self.native!r}")
        if self.samplesize % self.num_chains:
            raise ValueError(f"{owner}: samplesize ({self.samplesize}) must be a multiple "
                             f"of num_chains ({self.num_chains}): each chain draws "
                             f"samplesize / num_chains")
        if self.samplesize // self.num_chains < 2:
            raise ValueError(f"{owner}: samplesize must give each chain at least 2 draws, "
                             f"got {self.samplesize} for {self.num_chains} chains")
        if self.effective_size is not None and self.samplesize < 2 * self.effective_size:
            # the adaptive sample keeps at most 2 draws_per_chain per chain: with fewer
            # than 2 effective_size draws it can only get there by near-independent
            # draws, and doubles the interval towards max_interval
            raise ValueError(
                f"{owner}: samplesize = {self.samplesize} draws per sample cannot reach "
                f"effective_size={self.effective_size:g} without intervals long enough to "
                f"make every draw nearly independent; draw at least 2 x effective_size = "
                f"{2 * self.effective_size:g} (a larger samplesize), or lower "
                f"effective_size")
        if self.triadic is not None and self.sampler == "gibbs":
            raise ValueError(f"{owner}: triadic is a share of the sparse sampler's "
                             f"proposals; sampler='gibbs' has none (pass sampler='sparse' "
                             f"or leave triadic unset)")
        if self.native and self.sampler == "gibbs":
            raise ValueError(f"{owner}: native=True asks for the compiled sparse sampler, "
                             f"not sampler='gibbs' (pass sampler='sparse' or leave native "
                             f"unset)")

    @property
    def draws_per_chain(self) -> int:
        """Draws each chain keeps per simulation: ``samplesize / num_chains``."""
        return self.samplesize // self.num_chains


@dataclasses.dataclass(frozen=True)
class MCMLEControl:
    """The Monte Carlo MLE's settings (statnet's ``control.ergm(MCMLE.*)``; see
    :func:`~numpyro_ugm.network.estimation.mcmle.mcmle` for the algorithm).

    Attributes
    ----------
    max_iterations : int
        ergm's ``MCMLE.maxit`` (60).
    termination : {"confidence", "hotelling", "none"}
        ergm's ``MCMLE.termination`` (``"confidence"``).
    confidence, precision : float
        ergm's ``MCMLE.confidence`` (0.99) and ``MCMLE.MCMC.precision`` (0.1).
    steplength_margin, max_step : float
        ergm's ``MCMLE.steplength.margin`` (0.05) and ``MCMLE.steplength`` (1).
    min_step_length, stall_iterations : float, int
        Stop with :class:`~numpyro_ugm.network.ErgmDegeneracyError` when the step
        length stays below ``min_step_length`` (1e-4) for ``stall_iterations`` (3)
        iterations.
    max_repeats : int
        Most ``simulate`` calls joined into one iteration's sample (8).
    hotelling_min_p_value : float
        ergm's ``MCMLE.conv.min.pval`` (0.5, for ``"hotelling"``).
    metric : {"lognormal", "naive"}
        ergm's ``MCMLE.metric``: the approximation each step maximizes.
    max_loss : float or None
        The trust region: the largest estimated loss of log-likelihood (nats) a step may
        make (1); None: every step is taken.
    max_rejections : int
        Rejected steps in a row before giving up (8).
    last_boost : int
        The final sample (for the standard errors) is at least this many ``simulate``
        calls (ergm's ``MCMLE.last.boost``, 4).
    final_repeats : int, optional
        ``simulate`` calls in the final sample (default max(the last iteration's,
        ``last_boost``)).
    num_bridges : int
        Bridges of the log-likelihood (ergm's ``bridge.nsteps``, 16).
    bridge_draws : int
        Draws per bridge over all chains (512: 8,192 in all, ergmx's 33 x 256 = 8,448).
    """

    max_iterations: int = 60
    termination: str = "confidence"
    confidence: float = 0.99
    precision: float = 0.1
    steplength_margin: float = 0.05
    max_step: float = 1.0
    min_step_length: float = 1e-4
    stall_iterations: int = 3
    max_repeats: int = 8
    hotelling_min_p_value: float = 0.5
    metric: str = "lognormal"
    max_loss: float | None = 1.0
    max_rejections: int = 8
    last_boost: int = 4
    final_repeats: int | None = None
    num_bridges: int = 16
    bridge_draws: int = 512

    def __post_init__(self):
        owner = "MCMLEControl"
        put = object.__setattr__
        for name in ("max_iterations", "stall_iterations", "max_repeats", "max_rejections",
                     "last_boost", "num_bridges", "bridge_draws"):
            put(self, name, _count(owner, name, getattr(self, name)))
        put(self, "final_repeats", _count(owner, "final_repeats", self.final_repeats,
                                          optional=True))
        _choice(owner, "termination", self.termination, TERMINATIONS)
        _choice(owner, "metric", self.metric, METRICS)
        put(self, "confidence", _number(owner, "confidence", self.confidence, high=1.0))
        put(self, "precision", _number(owner, "precision", self.precision))
        put(self, "steplength_margin", _number(owner, "steplength_margin",
                                               self.steplength_margin, closed_low=True))
        put(self, "max_step", _number(owner, "max_step", self.max_step, high=1.0,
                                      closed_high=True))
        put(self, "min_step_length", _number(owner, "min_step_length", self.min_step_length,
                                             closed_low=True, high=self.max_step))
        put(self, "hotelling_min_p_value", _number(owner, "hotelling_min_p_value",
                                                   self.hotelling_min_p_value, high=1.0))
        put(self, "max_loss", _number(owner, "max_loss", self.max_loss, optional=True))

    @property
    def hotelling_threshold(self) -> float:
        """The p-value the ``"hotelling"`` rule needs twice: 1 − √(1 − min p-value)."""
        return 1.0 - math.sqrt(1.0 - self.hotelling_min_p_value)


def _init_vector(owner, init):
    """``init`` as a tuple of finite floats (None passes)."""
    if init is None:
        return None
    try:
        values = np.asarray(init, np.float64)
    except (TypeError, ValueError):
        values = np.full(0, np.nan)
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"{owner}: init must be a vector of finite values, one per "
                         f"coefficient, got {init!r}")
    return tuple(float(v) for v in values)


@dataclasses.dataclass(frozen=True)
class ErgmControl:
    """Every setting of :func:`~numpyro_ugm.network.fit_ergm`, as statnet's
    ``control.ergm()``.

    Attributes
    ----------
    sampling : SamplingControl
        How the chains run (``MCMC.*``).
    mcmle : MCMLEControl
        The Monte Carlo MLE (``MCMLE.*``).
    init : sequence of float, optional
        θ to start the Monte Carlo MLE from instead of the MPLE (ergm's ``init``), in
        the order of the coefficients; unused by dyad-independent models.
    mple_samplesize : "auto", int or None
        None: the observed statistics, the MPLE and the log-likelihood's reference from
        every dyad by (n, n) matrices. An int: from the edge list, the MPLE from every tie
        and that many uniform non-ties, weighted (ergm's ``init.MPLE.samplesize``).
        ``"auto"``: None up to ``sampling.sparse_limit`` dyads, else ergm's
        max(√N, m, 40) · 8 (N dyads, m ties).
    estimator : Estimator, optional
        Learn θ with :class:`~numpyro_ugm.learn.MLE` and this estimator (e.g.
        ``ugm.PCD(256)``) instead of the Monte Carlo MLE.
    num_steps : int
        The optimizer steps of ``estimator`` (2000).
    optimizer : optax GradientTransformation, optional
        The optimizer of ``estimator`` (default Adam(0.01), iterates averaged over the
        second half).
    """

    sampling: SamplingControl = dataclasses.field(default_factory=SamplingControl)
    mcmle: MCMLEControl = dataclasses.field(default_factory=MCMLEControl)
    init: tuple | None = None
    mple_samplesize: int | str | None = "auto"
    estimator: Any = None
    num_steps: int = 2000
    optimizer: Any = None

    def __post_init__(self):
        owner = "ErgmControl"
        if not isinstance(self.sampling, SamplingControl):
            raise TypeError(f"{owner}: sampling must be a SamplingControl, got "
                            f"{type(self.sampling).__name__}")
        if not isinstance(self.mcmle, MCMLEControl):
            raise TypeError(f"{owner}: mcmle must be an MCMLEControl, got "
                            f"{type(self.mcmle).__name__}")
        object.__setattr__(self, "init", _init_vector(owner, self.init))
        size = self.mple_samplesize
        if isinstance(size, str):
            _choice(owner, "mple_samplesize", size, ("auto",))
        elif size is not None:
            object.__setattr__(self, "mple_samplesize", _count(owner, "mple_samplesize",
                                                               size))
        if self.estimator is not None and not isinstance(self.estimator, Estimator):
            raise TypeError(f"{owner}: estimator must be one of the package's estimators "
                            f"(ugm.PCD(...), ugm.PSMC(...), ...) or None, got "
                            f"{type(self.estimator).__name__}")
        object.__setattr__(self, "num_steps", _count(owner, "num_steps", self.num_steps))
        for name in ("init", "update"):
            if self.optimizer is not None and not callable(getattr(self.optimizer, name,
                                                                   None)):
                raise TypeError(f"{owner}: optimizer must be an optax "
                                f"GradientTransformation (init, update), got "
                                f"{type(self.optimizer).__name__}")
