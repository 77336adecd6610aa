"""Run every benchmark script in this folder, each in its own process (so that peak
memory and compilation caches do not leak between them), and print the headline numbers
they report (``RESULT`` lines, see ``_report.py``) as one markdown table at the end.
Run: make bench."""

import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
rows = []
for script in sorted(here.glob("bench_*.py")):
    print(f"\n=== {script.name} ===", flush=True)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        print(line, end="", flush=True)
        if line.startswith("RESULT\t"):
            rows.append([script.name] + line.rstrip("\n").split("\t")[1:])
    if proc.wait() != 0:
        rows.append([script.name, "(failed)", f"exit status {proc.returncode}", ""])

print("\n| script | measure | value | note |\n| --- | --- | --- | --- |")
for row in rows:
    print("| " + " | ".join((row + ["", "", "", ""])[:4]) + " |")
