"""The code of the README and of the docs' pages (getting started, tutorials, how-to guides,
explanations) runs, so that the pages cannot drift from the package.

Every fenced code block marked ``python`` of a page runs, in page order, in one namespace per page
(as a reader who pastes them one after the other would run them), in a fresh temporary
directory. A page steers its test with HTML comments, which the rendered page hides:

* ``<!-- doc-test: replace OLD -> NEW -->``: run the page's code with ``OLD`` replaced by
  ``NEW`` (smaller sizes, fewer steps); the page says in its text that the test runs it
  smaller, and a replacement whose ``OLD`` no longer occurs fails the test;
* ``<!-- doc-test: slow -->``: the page runs under ``pytest -m slow`` only;
* ``<!-- doc-test: needs MODULE -->``: skip the page (saying why) without ``MODULE``.

A block whose first line is ``# doc-test: skip (why)`` is not run (MNIST-sized, a GPU,
several processes); the reason is required and shown to the reader.

Besides, every name that a page of ``docs/`` or the README writes after ``ugm.`` or
``numpyro_ugm.`` must exist in the package (prose names code too).
"""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: pages whose code blocks run: the README, the getting-started page, the tutorials, the
#: how-to guides and the explanations
PAGES = ([ROOT / "README.md", DOCS / "index.md"]
         + [page for part in ("tutorials", "howto", "explanation")
            for page in sorted((DOCS / part).glob("*.md"))])
#: every page whose ``ugm.NAME`` references are resolved
ALL_PAGES = [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md")
                                          if "_build" not in p.parts)

FENCE = re.compile(r"^```(\S*)\s*$")
REPLACE = re.compile(r"<!--\s*doc-test:\s*replace\s+(.+?)\s+->\s+(.+?)\s*-->")
NEEDS = re.compile(r"<!--\s*doc-test:\s*needs\s+([\w.]+)\s*-->")
SLOW = re.compile(r"<!--\s*doc-test:\s*slow\s*-->")
SKIP = re.compile(r"#\s*doc-test:\s*skip\b\s*(.*)")


def code_blocks(text):
    """The ``python`` fenced blocks of a markdown text: (line number, code) pairs."""
    blocks, lines, start, info = [], [], None, None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if start is None and fence:
            start, info, lines = number, fence.group(1), []
        elif start is not None and line.strip() == "```":
            if info == "python":
                blocks.append((start + 1, "\n".join(lines) + "\n"))
            start = None
        elif start is not None:
            lines.append(line)
    assert start is None, f"a code fence opened at line {start} is never closed"
    return blocks


def page_program(text, name):
    """The blocks a page's test runs, with the page's replacements made:
    a list of (line number, code), and the skipped blocks' reasons."""
    replacements = REPLACE.findall(text)
    run, skipped = [], []
    for line, code in code_blocks(text):
        first = code.lstrip().splitlines()[0] if code.strip() else ""
        skip = SKIP.match(first)
        if skip:
            assert skip.group(1).strip(), f"{name}:{line}: '# doc-test: skip' needs a reason"
            skipped.append(skip.group(1).strip())
            continue
        run.append((line, code))
    source = "\n".join(code for _, code in run)
    for old, new in replacements:
        assert old in source, f"{name}: doc-test replacement {old!r} occurs in no block"
    run = [(line, _replace(code, replacements)) for line, code in run]
    return run, skipped


def _replace(code, replacements):
    for old, new in replacements:
        code = code.replace(old, new)
    return code


def _param(page):
    text = page.read_text()
    marks = [pytest.mark.slow] if SLOW.search(text) else []
    return pytest.param(page, marks=marks, id=page.relative_to(ROOT).as_posix())


@pytest.mark.parametrize("page", [_param(p) for p in PAGES])
def test_the_page_code_runs(page, tmp_path, monkeypatch):
    text = page.read_text()
    for module in NEEDS.findall(text):
        pytest.importorskip(module, reason=f"{page.name} needs {module}")
    name = page.relative_to(ROOT).as_posix()
    run, _ = page_program(text, name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": "__doc_test__"}
    for line, code in run:
        exec(compile(code, f"{name}, block at line {line}", "exec"), namespace)


def test_the_readme_and_every_tutorial_have_code_that_runs():
    for page in PAGES:
        run, _ = page_program(page.read_text(), page.name)
        if page.parent.name == "tutorials" or page.name == "README.md":
            assert run, f"{page.name} has no code block that runs"


REFERENCE = re.compile(r"\b(ugm|numpyro_ugm)((?:\.[A-Za-z_]\w*)+)")


def resolve(dotted):
    """The object ``numpyro_ugm.<dotted>``, importing submodules as needed."""
    parts = dotted.split(".")
    obj = importlib.import_module("numpyro_ugm")
    for i, part in enumerate(parts):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        module = "numpyro_ugm." + ".".join(parts[:i + 1])
        obj = importlib.import_module(module)  # raises when there is no such name
    return obj


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_the_page_writes_exists(page):
    missing = []
    for _, dotted in REFERENCE.findall(page.read_text()):
        dotted = dotted.lstrip(".")
        if dotted.rsplit(".", 1)[-1] in ("py", "md"):  # a file name such as ugm.py
            continue
        try:
            resolve(dotted)
        except (ImportError, AttributeError):
            missing.append(dotted)
    assert not missing, f"{page.name} names what the package does not have: {missing}"


def test_the_parser_reads_markers(tmp_path):
    text = ("intro\n<!-- doc-test: replace 10_000 -> 50 -->\n<!-- doc-test: slow -->\n"
            "```python\nx = 10_000\n```\n\n```text\nnot code\n```\n"
            "```python\n# doc-test: skip (downloads MNIST)\nimport mnist\n```\n"
            "```python\ny = x + 1\n```\n")
    run, skipped = page_program(text, "page.md")
    assert [code for _, code in run] == ["x = 50\n", "y = x + 1\n"]
    assert [line for line, _ in run] == [5, 16]
    assert skipped == ["(downloads MNIST)"]
    assert SLOW.search(text)
    with pytest.raises(AssertionError, match="occurs in no block"):
        page_program(text.replace("x = 10_000", "x = 3"), "page.md")
    with pytest.raises(AssertionError, match="needs a reason"):
        page_program("```python\n# doc-test: skip\nx = 1\n```\n", "page.md")


def test_resolve_finds_names_and_refuses_drift():
    assert resolve("PCD") is importlib.import_module("numpyro_ugm").PCD
    assert resolve("network.sampling.compiled").__name__ == "numpyro_ugm.network.sampling.compiled"
    for gone in ("exact.fit", "models.ising", "kernels.gibs"):
        with pytest.raises((ImportError, AttributeError)):
            resolve(gone)
