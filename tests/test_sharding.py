"""Multi-device scale-out gives the numbers of a one-device run (4 simulated host
devices, in a subprocess since XLA_FLAGS must be set before JAX starts)."""

import subprocess
import sys
from pathlib import Path


def test_sharded_runs_match_single_device():
    script = Path(__file__).parent / "scripts" / "sharded_equals_single.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split() for line in out.stdout.strip().splitlines()]
    names = [r[0] for r in rows]
    assert names == ["PCD", "CD", "PF", "MCMCMLE", "SMC", "PSMC", "CRF-PCD", "AIS"], names
    for name, param_diff, grad_diff, split in rows:
        # same up to the order of floating-point sums across devices
        assert float(param_diff) < 1e-4 and float(grad_diff) < 1e-3, (name, param_diff)
        assert split != "False", f"{name}: particles were not split over the devices"
