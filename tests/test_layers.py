"""The layers of docs/architecture.md: every import inside the package points to the
same layer or to one above it in the table, never down to a later one."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "numpyro_ugm"

#: the table of docs/architecture.md, first layer first: top-level module or package
LAYERS = [
    ["runtime", "domains"],
    ["conditionals"],
    ["structure"],
    ["model"],
    ["kernels"],
    ["estimators"],
    ["evaluate"],
    ["learn"],
    ["sampling", "prediction", "infer", "models", "network", "datasets"],
    ["posterior"],
]

#: the same rule inside the network analysis (numpyro_ugm/network/), first folder first
NETWORK_LAYERS = [
    ["graphs"],
    ["terms"],
    ["model"],
    ["sampling"],
    ["diagnostics", "control"],
    ["estimation"],
    ["summary"],
    ["fit"],
]


def imports_of(path, package=PACKAGE):
    """Top-level package modules that ``path`` imports (relative imports resolved)."""
    parts = path.relative_to(package).with_suffix("").parts
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(parts[:-1])[:len(parts) - node.level]
            full = base + (node.module.split(".") if node.module else [])
            if full:
                out.add(full[0])
            else:  # "from . import x" at the top of the package
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("numpyro_ugm."):
            out.add(node.module.split(".")[1])
    return out


def downward_imports(package=PACKAGE, layers=LAYERS):
    """Every import of ``package`` that points to a later layer, in words."""
    rank = {name: i for i, names in enumerate(layers) for name in names}
    downward = []
    for path in sorted(package.rglob("*.py")):
        top = path.relative_to(package).with_suffix("").parts[0]
        if top == "__init__":
            continue
        assert top in rank, f"{top} is in no layer of docs/architecture.md"
        for imported in imports_of(path, package):
            if imported in rank and rank[imported] > rank[top]:
                downward.append(f"{path.relative_to(package)} imports {imported}")
    return downward


def test_every_module_is_in_a_layer_and_imports_point_one_way():
    assert not downward_imports()


def test_the_network_folders_import_one_way():
    assert not downward_imports(PACKAGE / "network", NETWORK_LAYERS)


def test_the_check_finds_an_import_that_points_down(tmp_path):
    (tmp_path / "structure").mkdir()
    (tmp_path / "structure" / "graph.py").write_text("from ..model import UGM\n")
    (tmp_path / "conditionals.py").write_text("from .domains import Spin\n")
    assert downward_imports(tmp_path) == ["structure/graph.py imports model"]
