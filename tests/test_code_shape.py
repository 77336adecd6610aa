"""The package's size and naming rules (docs/architecture.md, "Conventions"): no function
over 80 lines of code (docstring excluded), no class over 250 lines, no module over 500
lines, and no module importing another module's private name.

A numba-compiled kernel may be longer where splitting it costs speed: its docstring then
says so (:data:`EXEMPT`), with the measurement beside it."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "numpyro_ugm"
MAX_FUNCTION, MAX_CLASS, MAX_MODULE = 80, 250, 500
#: the words by which a compiled kernel's docstring says that it is long on purpose
EXEMPT = "Longer than 80 lines on purpose"


def _code_lines(node, lines):
    """Lines of a function less its docstring (comments and blank lines count)."""
    body = node.body
    span = node.end_lineno - node.lineno + 1
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        span -= body[0].end_lineno - body[0].lineno + 1
    return span


def oversized(package=PACKAGE):
    """Every function, class and module over its limit, in words."""
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        where = path.relative_to(package)
        if len(lines) > MAX_MODULE:
            found.append(f"{where}: {len(lines)} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _code_lines(node, lines)
                exempt = EXEMPT in (ast.get_docstring(node) or "") and any(
                    "jit" in ast.unparse(d) for d in node.decorator_list)
                if n > MAX_FUNCTION and not exempt:
                    found.append(f"{where}:{node.lineno} {node.name}: {n} lines of code")
            elif isinstance(node, ast.ClassDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_CLASS:
                    found.append(f"{where}:{node.lineno} class {node.name}: {n} lines")
    return found


def private_imports(package=PACKAGE):
    """Every ``from module import _name`` between two modules of the package."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(
                    "numpyro_ugm")):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(package)}:{node.lineno} imports "
                                     f"{alias.name} from {'.' * node.level}{node.module or ''}")
    return found


def test_no_function_class_or_module_over_its_size():
    assert not oversized(), "\n".join(oversized())


def test_no_module_imports_another_modules_private_name():
    assert not private_imports(), "\n".join(private_imports())


def test_the_checks_find_what_they_look_for(tmp_path):
    body = "\n".join(f"    x{k} = {k}" for k in range(MAX_FUNCTION + 1))
    (tmp_path / "big.py").write_text(f'def f():\n    """Doc.\n\n    More.\n    """\n{body}\n')
    (tmp_path / "small.py").write_text("from .big import _hidden\n\n\ndef g():\n    pass\n")
    (tmp_path / "kernel.py").write_text(f'@jit\ndef k():\n    """{EXEMPT}: measured."""\n{body}\n'
                                        f'def h():\n    """{EXEMPT}, but not compiled."""\n{body}\n')
    assert oversized(tmp_path) == [f"big.py:1 f: {MAX_FUNCTION + 2} lines of code",
                                   f"kernel.py:{MAX_FUNCTION + 5} h: {MAX_FUNCTION + 2} lines of code"]
    assert private_imports(tmp_path) == ["small.py:1 imports _hidden from .big"]
