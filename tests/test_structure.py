"""The size rules of docs/design.md's "Architecture": modules within their line limits,
docstrings short, no module reaching into another's ``_private`` names. Read with ``ast``
and line counts, nothing imported."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pathserver"
#: (files, the most lines each may have).
LINE_LIMITS = (
    (sorted((PACKAGE / "core").glob("*.py")), 900),
    (sorted(p for p in PACKAGE.rglob("*.py") if "core" not in p.relative_to(PACKAGE).parts), 600),
    (sorted((ROOT / "engine_clients" / "godot" / "addons" / "pathserver").glob("*.gd")), 800),
    (sorted((ROOT / "engine_clients" / "csharp" / "Runtime").glob("*.cs")), 1000),
)
MAX_DOCSTRING_LINES = 25
MODULES = sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@pytest.mark.parametrize("files, limit", LINE_LIMITS, ids=["core", "package", "godot addon", "csharp runtime"])
def test_every_file_is_within_its_line_limit(files, limit):
    assert files, "no files found: the layout moved"
    over = {_name(p): n for p in files if (n := p.read_text(encoding="utf-8").count("\n")) > limit}
    assert not over, f"over {limit} lines: {over}"


def _docstrings(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield getattr(node, "name", "module"), text.count("\n") + 1


def test_no_docstring_is_longer_than_the_limit():
    long = [f"{_name(p)}:{name} ({lines} lines)" for p in MODULES
            for name, lines in _docstrings(ast.parse(p.read_text(encoding="utf-8")))
            if lines > MAX_DOCSTRING_LINES]
    assert not long, f"docstrings over {MAX_DOCSTRING_LINES} lines (the reasoning goes to docs/design.md): {long}"


def _private_reaches(path: Path):
    """``from pathserver.x import _y`` and ``module._y`` where ``module`` was imported from
    the package: a private name used outside its module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    ours = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pathserver") or (
                isinstance(node, ast.ImportFrom) and node.level):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield f"{_name(path)}:{node.lineno} imports {alias.name}"
                ours.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            ours.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("pathserver"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ours
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            yield f"{_name(path)}:{node.lineno} reads {node.value.id}.{node.attr}"


def test_no_module_uses_another_modules_private_names():
    """The package and the benches (the tests may reach into a kernel's helpers)."""
    found = [reach for p in (*MODULES, *sorted((ROOT / "bench").glob("*.py"))) for reach in _private_reaches(p)]
    assert not found, found


def test_the_private_name_check_sees_both_forms(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from pathserver.core.jpsplus import _hidden\nfrom pathserver import server\nserver._x\n")
    found = list(_private_reaches(sample))
    assert len(found) == 2 and "_hidden" in found[0] and "server._x" in found[1]
