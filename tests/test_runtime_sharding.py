"""Multi-device scale-out gives the numbers of a one-device run (4 simulated host
devices, in a subprocess since XLA_FLAGS must be set before JAX starts)."""

import subprocess
import sys
from pathlib import Path

import pytest

#: the default run covers persistent particles (PCD); the slow run adds the weighted,
#: resampled and tempered estimators, a CRF's per-example particles and AIS. The longest
#: test by far: with PF in the default run it took 137 s of an 8-minute suite on a cold
#: compilation cache, with PCD + SMC 60 s, with PCD, the CRF and AIS 31 s.
CASES = [["PCD"], pytest.param(["CD", "PF", "MCMCMLE", "SMC", "PSMC", "CRF-PCD", "AIS"],
                               marks=pytest.mark.slow)]


@pytest.mark.slow
@pytest.mark.parametrize("cases", CASES, ids=["default", "rest"])
def test_sharded_runs_match_single_device(cases):
    script = Path(__file__).parent / "scripts" / "sharded_equals_single.py"
    out = subprocess.run([sys.executable, str(script), *cases], capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split() for line in out.stdout.strip().splitlines()]
    names = [r[0] for r in rows]
    assert names == cases, names
    for name, param_diff, grad_diff, split in rows:
        # same up to the order of floating-point sums across devices
        assert float(param_diff) < 1e-4 and float(grad_diff) < 1e-3, (name, param_diff)
        assert split != "False", f"{name}: particles were not split over the devices"
