"""The package outside its repository: build the wheel, install it (with the ``network``
extra) into a fresh virtual environment in a temporary folder, and there run the README's
quick start and a network fit from the networks shipped inside the package.

Run by ``make install-check`` (part of ``make test``): ``python tests/scripts/install_check.py``.
It catches a missing package-data entry, an import of a file outside the package, and a
dependency missing from the core or the extra.
"""

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

NETWORK_FIT = """
import numpyro_ugm as ugm
from numpyro_ugm import datasets
magnolia = datasets.network("faux.magnolia.high")
print("faux.magnolia.high:", magnolia.number_of_nodes(), "nodes,",
      magnolia.number_of_edges(), "edges")
assert (magnolia.number_of_nodes(), magnolia.number_of_edges()) == (1461, 974)
fit = ugm.network.fit_ergm(datasets.network("flomarriage"), "edges + nodecov('wealth')")
print(fit)
# R's ergm (statnet tutorial): edges -2.595 (0.536), nodecov.wealth 0.01055 (0.00465)
assert abs(fit.estimates[0] + 2.595) < 1e-3 and abs(fit.estimates[1] - 0.01055) < 1e-4, fit.estimates
print("installed at", ugm.__file__)
"""


def run(command, **kwargs):
    print("$", " ".join(map(str, command)), flush=True)
    subprocess.run(command, check=True, **kwargs)


def quick_start():
    """The README's first python block."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    if not blocks:
        raise SystemExit("README.md has no python block to run")
    return blocks[0]


def main():
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="numpyro_ugm_install_") as tmp:
        tmp = Path(tmp)
        run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
             "-w", tmp / "dist", REPO])
        (wheel,) = (tmp / "dist").glob("numpyro_ugm-*.whl")
        run([sys.executable, "-m", "venv", tmp / "venv"])
        python = tmp / "venv" / "bin" / "python"
        run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
             f"{wheel}[network]"])
        (tmp / "quick_start.py").write_text(quick_start())
        (tmp / "network_fit.py").write_text(NETWORK_FIT)
        clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp)}  # no PYTHONPATH, no data folder
        run([python, "quick_start.py"], cwd=tmp, env=clean)
        run([python, "network_fit.py"], cwd=tmp, env=clean)
    print(f"install check passed in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
