"""Print, per test file, its seconds and what JAX spent of them tracing, lowering and
compiling (``pytest --compile-report PREFIX`` writes one ``PREFIX.<worker>`` per worker),
longest first, as a markdown table with the totals.

Run: ``python tests/scripts/compile_report.py PREFIX`` (``make test-durations`` does).
"""

import collections
import json
import sys
from pathlib import Path

prefix = Path(sys.argv[1])
durations = json.loads((Path(__file__).resolve().parents[1] / "durations.json").read_text())
files = collections.defaultdict(collections.Counter)
for part in prefix.parent.glob(prefix.name + ".*"):
    for name, counts in json.loads(part.read_text()).items():
        files[name].update(counts)

keys = ("trace_s", "lower_s", "compile_s", "compiles", "cache_hits")
total = collections.Counter()
print("| file | seconds | trace | lower | compile | programs compiled | cache hits |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for name in sorted(files, key=lambda f: -durations.get(f, 0.0)):
    counts = files[name]
    total.update(counts)
    total["seconds"] += durations.get(name, 0.0)
    print(f"| {name} | {durations.get(name, 0.0):.1f} | "
          + " | ".join(f"{counts[k]:.1f}" if k.endswith("_s") else str(counts[k])
                       for k in keys) + " |")
print(f"| total | {total['seconds']:.1f} | "
      + " | ".join(f"{total[k]:.1f}" if k.endswith("_s") else str(total[k]) for k in keys)
      + " |")
