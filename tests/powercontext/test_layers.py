"""The house's layers, read from the imports: no arrow runs back up.

From the bottom: the kernel (``powercontext``: Artifact revisions and heads, analyzer,
search, API plumbing), then the families ``memory``, ``experience`` and ``contextpack``
(each may use the ones before it), then the composition root ``powercontext.server``
(settings, URLs, serving, MCP), which may import everything. ``hooks`` stands alone: the
hook runs inside the agent with the standard library only.

An import counts wherever it is written (module level or inside a function) and so does
a dotted string naming a project module (``import_string`` paths, settings values): a
string is an arrow too, only a later one.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("powercontext", "memory", "experience", "contextpack", "hooks")
# Lower index = lower layer. A module may import its own layer and the ones below.
LAYERS = ("powercontext", "memory", "experience", "contextpack", "powercontext.server")


def layer(module: str) -> str | None:
    """The layer ``module`` belongs to; None outside the layered packages."""
    if module == "powercontext.server" or module.startswith("powercontext.server."):
        return "powercontext.server"
    top = module.split(".")[0]
    return top if top in PACKAGES else None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_project_module(dotted: str) -> bool:
    """Whether ``dotted`` (possibly ending in an attribute) names a module of the repo."""
    parts = dotted.split(".")
    if len(parts) < 2 or parts[0] not in PACKAGES:
        return False
    for end in range(len(parts), 1, -1):
        base = REPO.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


def imported_modules(path: Path, source: str) -> list[tuple[int, str]]:
    """(line, module) for every import in ``source`` and every dotted string naming a
    project module; relative imports resolved against ``path``."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # The imported names may be modules themselves (``from .. import memory``).
            found.extend(
                (node.lineno, f"{module}.{alias.name}" if module else alias.name)
                for alias in node.names
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if is_project_module(node.value):
                found.append((node.lineno, node.value))
    return found


def upward_arrows(path: Path, source: str) -> list[str]:
    """Each import in ``source`` that runs from a lower layer up to a higher one."""
    here = layer(module_name(path))
    arrows = []
    for line, module in imported_modules(path, source):
        there = layer(module)
        if here is None or there is None or there == here:
            continue
        if here == "hooks" or there == "hooks" or LAYERS.index(there) > LAYERS.index(here):
            arrows.append(
                f"{path.relative_to(REPO)}:{line}: {here} imports {module} ({there}): "
                "the arrow runs back up"
            )
    return arrows


def project_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (REPO / package).rglob("*.py"))


def test_no_import_runs_back_up() -> None:
    arrows = [arrow for path in project_files() for arrow in upward_arrows(path, path.read_text())]
    assert not arrows, "\n".join(arrows)


def test_every_layered_file_is_read() -> None:
    files = project_files()
    assert REPO / "powercontext" / "artifacts.py" in files
    assert REPO / "powercontext" / "server" / "settings.py" in files
    assert REPO / "memory" / "migrations" / "0001_initial.py" in files


@pytest.mark.parametrize(
    ("where", "source", "arrow"),
    [
        ("powercontext/search/sqlite.py", "from memory.values import scope_token\n", "memory"),
        ("powercontext/maintenance.py", "def f():\n    import experience.rebuild\n", "experience"),
        ("powercontext/maintenance.py", 'PATH = "memory.rebuild.memory_rebuild"\n', "memory"),
        ("powercontext/health.py", "from powercontext.server import urls\n", "server"),
        ("memory/selectors.py", "from experience.selectors import x\n", "experience"),
        ("memory/api.py", "from .. import contextpack\n", "contextpack"),
        ("experience/selectors.py", "from contextpack.builder import ArtifactRef\n", "contextpack"),
        ("contextpack/api.py", "from powercontext.server.mcp import server\n", "server"),
        ("hooks/install.py", "from powercontext import config\n", "powercontext"),
    ],
)
def test_an_arrow_back_up_is_caught(where: str, source: str, arrow: str) -> None:
    (found,) = upward_arrows(REPO / where, source)
    assert arrow in found


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("memory/rebuild.py", "from powercontext.search import search_backend\n"),
        ("contextpack/application.py", "from memory import selectors\n"),
        ("experience/admin.py", "from memory.selectors import memory_revision_cited\n"),
        ("powercontext/server/urls.py", "from contextpack.preview import preview\n"),
        ("powercontext/api/auth.py", 'SCOPE = "memory.search"\n'),
    ],
)
def test_an_arrow_down_or_a_name_is_not_an_arrow(where: str, source: str) -> None:
    assert upward_arrows(REPO / where, source) == []
