"""The package's imports flow one way, as docs/design.md's Architecture section says (after
STYLE.md: server -> protocol, server -> grid -> core, maps -> grid; core imports only numba
and numpy; protocol imports no numba), and no module
imports another that imports it back, directly or through others.

Every ``import`` is read with ``ast``, function-level ones included: an import deferred
into a function still ties the two modules together. Implicit imports of a parent package
(``import pathserver.maps.formats`` runs ``pathserver/maps/__init__.py``) and the
package's own lazy public names (``pathserver.__getattr__``, by module name) are not
edges here.
"""

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pathserver"

DESIGN = PACKAGE.parent / "docs" / "design.md"
#: In docs/design.md's Architecture section: ``**`part`** (imports: a, b)`` or, for the
#: package's own ``__init__`` and ``__main__``, ``part (imports: ...)`` in the text.
_RULE = re.compile(r"(?:\*\*`(\w+)`\*\*|`(pathserver|__main__)`[^(]*?) \(imports: ([^)]*)\)")


def allowed_from_design() -> dict[str, set[str]]:
    """Each part of the package (a subpackage, a top-level module, or "" for the package's
    own ``__init__``) and the other parts it may import, as docs/design.md's Architecture
    section states them: that section is the rule this test enforces."""
    text = DESIGN.read_text()
    section = text[text.index("## Architecture"):]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    allowed = {}
    for name, special, imports in _RULE.findall(" ".join(section.split())):
        listed = imports.split(";")[0].strip()  # "core, errors; never numba" -> "core, errors"
        parts = set() if listed == "nothing" else {word.strip() for word in listed.split(",")}
        key = "" if special == "pathserver" else (special or name)
        allowed[key] = {"" if p == "pathserver" else p for p in parts}
    return allowed


ALLOWED = allowed_from_design()

#: Third-party packages a part may import besides the standard library; None: any.
EXTERNAL = {"core": {"numba", "numpy"}}
#: Third-party packages a part must never import.
FORBIDDEN_EXTERNAL = {"protocol": {"numba", "llvmlite"}}


def module_files() -> dict[str, Path]:
    """``pathserver.x.y`` -> its file, for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["pathserver", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = module_files()


def imported_names(module: str, path: Path) -> set[str]:
    """Every module name ``module`` imports, at any depth of its code. ``from a import b``
    counts as ``a.b`` when that is a module of the package, else as ``a``."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (path.name == "__init__.py")]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                names.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source)
    return names


def part(module: str) -> str:
    """The part of the package a module belongs to: ``pathserver.grid.search`` -> ``grid``."""
    return module.split(".")[1] if "." in module else ""


def internal_graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        targets = set()
        for name in imported_names(module, path):
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


GRAPH = internal_graph()


def test_every_part_of_the_package_has_a_place_in_the_layers():
    unknown = sorted({part(module) for module in MODULES} - set(ALLOWED))
    assert not unknown, f"give these parts of the package a line in docs/design.md's Architecture section: {unknown}"


def test_imports_between_parts_flow_one_way():
    wrong = [
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in sorted(targets)
        if part(target) != part(module) and part(target) not in ALLOWED.get(part(module), set())
    ]
    assert not wrong, "\n".join(wrong)


def test_core_imports_only_numba_numpy_and_the_standard_library_and_protocol_no_numba():
    wrong = []
    for module, path in MODULES.items():
        for name in imported_names(module, path):
            top = name.split(".")[0]
            if top == "pathserver" or top == "__future__":
                continue
            allowed = EXTERNAL.get(part(module))
            if allowed is not None and top not in allowed and top not in sys.stdlib_module_names:
                wrong.append(f"{module} imports {name}")
            if top in FORBIDDEN_EXTERNAL.get(part(module), ()):
                wrong.append(f"{module} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_back_through_others():
    """Tarjan's strongly connected components: any component of more than one module is a
    circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not circles, "\n".join(" <-> ".join(circle) for circle in circles)


def test_the_reader_sees_the_imports_it_is_checking():
    """The parser itself: the edges STYLE.md names are found, a function-level import too."""
    assert "pathserver.grid.gridmap" in GRAPH["pathserver.maps.formats"]
    assert "pathserver.core.query" in GRAPH["pathserver.grid.prepared"]
    assert "pathserver.grid.search" in GRAPH["pathserver.render"]  # imported inside run()
