"""Run every benchmark script in this folder, each in its own process (so that peak
memory and compilation caches do not leak between them). Run: make bench."""

import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
for script in sorted(here.glob("bench_*.py")):
    print(f"\n=== {script.name} ===", flush=True)
    subprocess.run([sys.executable, str(script)], check=False)
