"""Every default of every ready-made model and every entry point, run once as a new user
would, each result checked against an independent computation (issue 46).

Each row is one call at its defaults (the smallest size its docs suggest, scaled down):
our number, the independent one (own enumeration, closed forms, scipy, scikit-learn,
networkx: ``_sweep_reference.py``, which does not import the package), the deviation
(an absolute difference, or |z| for a Monte Carlo estimate over its own standard error)
and the tolerance it is held to. A row marked ``known (Fn)`` shows a finding of the
sweep outside the fixes made with it (``_sweep_rows.FINDINGS`` says what each is): it is
reported, not counted, and counts as a failure once it passes, so that the mark goes when
the defect is fixed.

Run::

    python benchmarks/defaults_sweep.py            # every check (3-5 minutes on 2 cores)
    python benchmarks/defaults_sweep.py --quick    # fewer learning steps and draws
    python benchmarks/defaults_sweep.py --only ais --markdown out.md

It prints the table and exits with status 1 when a check fails (``tests/
test_defaults_sweep.py`` runs the quick mode, marked slow). Results:
``benchmarks/results/defaults_sweep.md``.
"""

import argparse
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: XLA settings of the test suite (the Makefile's TEST_XLA_FLAGS): the sweep is
#: compile-bound (hundreds of small programs, each run once), and these compile them
#: 2-3 times faster; they change no number. Set XLA_FLAGS yourself to override.
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
os.environ.setdefault("XLA_FLAGS", FAST_COMPILE)

import importlib  # noqa: E402

import _sweep_rows  # noqa: E402

#: the modules of checks, in the order they run (importing one registers its checks)
CHECK_MODULES = ("_sweep_models", "_sweep_learning", "_sweep_sampling", "_sweep_posterior",
                 "_sweep_network")
for _name in CHECK_MODULES:
    importlib.import_module(_name)

COLUMNS = ("#", "area", "call", "defaults used", "ours", "independent", "deviation",
           "tolerance", "result", "s", "note")


def table(rows, markdown=False):
    """The rows as text (fixed columns) or a markdown table."""
    cells = [[str(k + 1), r.group, r.call, r.defaults, r.ours, r.reference,
              f"{r.deviation:.3g}", f"{r.tolerance:.3g}", r.verdict, f"{r.seconds:.1f}",
              r.note]
             for k, r in enumerate(rows)]
    if markdown:
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                  for row in cells]
        return "\n".join(lines)
    widths = [min(48, max(len(COLUMNS[i]), *(len(c[i]) for c in cells)))
              for i in range(len(COLUMNS))]
    fmt = lambda row: "  ".join(c[:w].ljust(w) for c, w in zip(row, widths))  # noqa: E731
    return "\n".join([fmt(COLUMNS)] + [fmt(c) for c in cells])


def hardware():
    import jax

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{os.cpu_count()} cores ({cpu}), JAX {jax.__version__} on "
            f"{jax.default_backend().upper()}, Python {platform.python_version()}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and draws")
    parser.add_argument("--only", default=None,
                        help="run the checks whose area or name contains this text")
    parser.add_argument("--markdown", default=None, help="also write the table here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = []
    for group, name, fn in _sweep_rows.CHECKS:
        if args.only and args.only not in group and args.only not in name:
            continue
        print(f"[{time.perf_counter() - start:6.0f} s] {group}: {name}", flush=True)
        rows += _sweep_rows.run_check(group, name, fn, args.quick)
    elapsed = time.perf_counter() - start
    failed = [r for r in rows if r.counts_as_failure]
    known = [r for r in rows if r.known and not r.passed]
    summary = (f"{len(rows)} checks: {len(rows) - len(failed) - len(known)} pass, "
               f"{len(known)} known findings, {len(failed)} failures; {elapsed:.0f} s "
               f"({'quick' if args.quick else 'full'} mode) on {hardware()}")
    print("\n" + table(rows) + "\n\n" + findings(rows) + summary)
    if args.markdown:
        Path(args.markdown).write_text(page(rows, summary, argv))
    return 1 if failed else 0


def page(rows, summary, argv):
    """The results page: the command, the machine, the legend and the table."""
    command = " ".join(["python benchmarks/defaults_sweep.py"]
                       + list(sys.argv[1:] if argv is None else argv))
    return f"""# Defaults sweep (issue 46)

Every ready-made model of `ugm.models` and every public entry point, called once at its
defaults as a new user would, each result checked against an independent computation
(`benchmarks/_sweep_reference.py`: own enumeration, closed forms, scipy, scikit-learn,
networkx; it does not import the package).

**Command:** `{command}` ({time.strftime("%Y-%m-%d")}; XLA flags
`{os.environ.get("XLA_FLAGS", "")}`, the test suite's: they compile faster and change
no number).
**Machine:** {hardware()}, shared with other jobs (times are indicative; "s" is the
check's time over its rows, compilation included).

Columns: *deviation* is the largest absolute difference, or, for a Monte Carlo estimate
(a note says "(|z|)"), the largest |error| over its own standard error (batch means of
one chain, the spread of repeated calls, or the estimator's reported error); a row
passes when it is within *tolerance*. *known (Fn)* rows show a finding of the sweep in a
part of the package it did not fix (listed under the table): they are reported, not
counted; once fixed they read *FIXED?* and fail until the mark is removed.

{table(rows, markdown=True)}

{findings(rows)}{summary}
"""


def findings(rows):
    """The known findings that rows show, one line each (empty when none)."""
    marks = sorted({r.known for r in rows if r.known})
    return "".join(f"* {m}: {_sweep_rows.FINDINGS.get(m, '')}\n" for m in marks) + (
        "\n" if marks else "")


if __name__ == "__main__":
    sys.exit(main())
