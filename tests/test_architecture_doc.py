"""The layer table of docs/architecture.md is the ``LAYERS`` table of test_layers.py:
the same rows in the same order, every top-level module of the package in one row, and
every module path the table names exists (so that the page cannot drift from the code)."""

import re

from test_layers import LAYERS, PACKAGE

PAGE = PACKAGE.parent / "docs" / "architecture.md"


def layer_rows(text):
    """The rows of the page's layer table (under "## The layers"): (modules column,
    owns column), the header and the separator left out."""
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if cells[0] in ("layer", "") or set(cells[0]) <= set("-"):
            continue
        rows.append((cells[1], cells[2]))
    return rows


def module_names(cell):
    """Top-level module names in a modules cell: ```x.py``` is ``x``, ```x/``` is ``x``."""
    names = []
    for span in re.findall(r"`([^`]+)`", cell):
        assert re.fullmatch(r"\w+(\.py|/)", span), f"{span!r} is not a module or package"
        names.append(span[:-3] if span.endswith(".py") else span[:-1])
    return names


def package_modules(package=PACKAGE):
    """The top-level modules and subpackages of ``package``."""
    return ({p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
            | {p.name for p in package.iterdir() if (p / "__init__.py").exists()})


def test_the_layer_table_is_layers_and_covers_the_package():
    rows = layer_rows(PAGE.read_text())
    assert [module_names(modules) for modules, _ in rows] == LAYERS
    assert {n for row in LAYERS for n in row} == package_modules()


def test_every_path_the_layer_table_names_exists():
    for modules, owns in layer_rows(PAGE.read_text()):
        for span in re.findall(r"`([\w/]+/[\w]+\.py)`", modules + " " + owns):
            assert (PACKAGE / span).is_file(), f"docs/architecture.md names {span}"


def test_the_check_finds_a_row_that_drifted(tmp_path):
    page = ("## The layers\n\n| layer | modules | owns |\n|---|---|---|\n"
            "| a | `domains.py`, `old/` | `old/gone.py` |\n\n## Next\n")
    rows = layer_rows(page)
    assert [module_names(m) for m, _ in rows] == [["domains", "old"]]
    assert rows[0][1] == "`old/gone.py`"
