"""The rows of ``defaults_sweep.py``: one :class:`Row` per call checked, the constructors
its checks use (:func:`close`, :func:`zcheck`, :func:`flag`) and the registry
(:func:`check`, :data:`CHECKS`)."""

import dataclasses
import time
import traceback

import numpy as np

#: (group, name, function(quick) -> list of Row), in the order registered
CHECKS = []

#: the findings of the sweep outside its own fixes, which rows mark as ``known``
FINDINGS = {
    "F3": "fit_exact of the graphical-lasso MAP (an L1 prior) stalls after 8-29 L-BFGS "
          "steps, 3e-4 to 5e-3 above the optimum (sklearn's objective), converged=False; "
          "it warns (no optimizer default found that reaches the kink's optimum)",
}


@dataclasses.dataclass
class Row:
    """One call checked: what was called with which defaults, our number, the
    independent one, the deviation and the tolerance it is held to.

    ``known`` names a finding of the sweep (the note's numbering) that the row shows,
    when the defect is outside the sweep's fixes: a known row that fails is reported,
    not counted; one that passes is (strictly) a failure, so that the mark is removed
    when the defect is fixed."""

    group: str
    call: str
    defaults: str
    ours: str
    reference: str
    deviation: float
    tolerance: float
    passed: bool
    known: str = ""
    note: str = ""
    seconds: float = 0.0

    @property
    def verdict(self):
        if self.known:
            return f"known ({self.known})" if not self.passed else f"FIXED? ({self.known})"
        return "pass" if self.passed else "FAIL"

    @property
    def counts_as_failure(self):
        return self.passed == bool(self.known)


def fmt(value):
    """Short text of a number or a small array."""
    if isinstance(value, str):
        return value
    a = np.asarray(value, np.float64)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    flat = a.ravel()
    text = ", ".join(f"{v:.4g}" for v in flat[:3])
    return f"[{text}{', …' if flat.size > 3 else ''}]"


def close(call, defaults, ours, reference, tol, *, known="", note=""):
    """Row comparing ``ours`` with ``reference`` (scalars or arrays): deviation the
    largest absolute difference."""
    o, r = np.asarray(ours, np.float64), np.asarray(reference, np.float64)
    deviation = float(np.max(np.abs(o - r))) if o.size else float("nan")
    return Row("", call, defaults, fmt(ours), fmt(reference), deviation, float(tol),
               bool(deviation <= tol), known, note)


def zcheck(call, defaults, ours, reference, z, tol=4.5, *, known="", note=""):
    """Row of a Monte Carlo estimate: deviation the largest |z| (error over its own
    standard error)."""
    deviation = float(np.max(np.abs(np.asarray(z, np.float64))))
    return Row("", call, defaults, fmt(ours), fmt(reference), deviation, float(tol),
               bool(deviation <= tol), known, note + (" " if note else "") + "(|z|)")


def flag(call, defaults, ours, reference, passed, *, known="", note=""):
    """Row of a yes/no check (deviation 0 when it holds, 1 when not)."""
    return Row("", call, defaults, fmt(ours), fmt(reference), 0.0 if passed else 1.0, 0.0,
               bool(passed), known, note)


def check(group):
    """Register ``fn(quick) -> list of Row`` under ``group``."""
    def register(fn):
        CHECKS.append((group, fn.__name__, fn))
        return fn
    return register


def run_check(group, name, fn, quick):
    """Run one registered check: its rows, timed (an exception is one failed row)."""
    start = time.perf_counter()
    try:
        rows = fn(quick)
    except Exception as error:  # a crash of a default call is a finding, reported as such
        detail = traceback.format_exception_only(type(error), error)[-1].strip()
        rows = [Row("", name, "", f"error: {detail[:160]}", "", float("nan"), 0.0, False)]
    seconds = (time.perf_counter() - start) / max(1, len(rows))
    for row in rows:
        row.group, row.seconds = group, seconds
    return rows
