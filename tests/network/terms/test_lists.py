"""A read-only install imports (issue 46, item 25): numba's disk cache is used where
numba can write one, and left out where it cannot."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

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


CALL = """
import warnings
import numpy as np
from numpyro_ugm.network.terms import lists
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert lists.find_slot(np.array([[[[3, 0], [5, 1]]]]), 0, 0, 2, 5) == 1
print("ok", sum("damaged" in str(w.message) for w in caught))
"""


def test_a_damaged_numba_cache_is_rebuilt(tmp_path):
    """Before: every call failed with EOFError from numba's cache until its folder was
    deleted by hand."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu",
           "NUMBA_CACHE_DIR": str(tmp_path)}

    def call():
        return subprocess.run([sys.executable, "-c", CALL], cwd=ROOT, capture_output=True,
                              text=True, timeout=300, env=env)

    assert call().stdout.strip() == "ok 0"  # writes the cache
    index = list(tmp_path.rglob("*find_slot*.nbi"))
    assert index
    for path in index:
        path.write_bytes(path.read_bytes()[:5])  # cut short
    done = call()
    assert done.returncode == 0 and done.stdout.strip() == "ok 1", done.stderr[-2000:]
    assert call().stdout.strip() == "ok 0"  # rebuilt
