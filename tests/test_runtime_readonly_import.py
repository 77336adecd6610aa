"""A read-only install imports (issue 46, item 25): numba's disk cache is used where
numba can write one, and left out where it cannot."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import numba.core.caching as caching
caching.CacheImpl._locator_classes = []  # as when no folder numba may write is found
import numpy as np
import numpyro_ugm
from numpyro_ugm.network.terms import lists
assert lists.find_slot(np.array([[[[3, 0], [5, 1]]]]), 0, 0, 2, 5) == 1
print("ok")
"""


def test_the_package_imports_where_numba_cannot_cache():
    """Before: RuntimeError "cannot cache function '_slot': no locator available" at
    ``import numpyro_ugm``."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                          text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                               "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
