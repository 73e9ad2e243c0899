"""The house's layers, read from the imports: no arrow runs back up, anywhere in the tree.

From the bottom: the kernel (``powercontext``: Artifact revisions and heads, analyzer,
search, API plumbing), then the families ``memory``, ``experience`` and ``contextpack``
(each may use the ones before it), then the composition root ``server`` (settings, URLs,
the HTTP edge, serving, MCP; ``manage.py`` is its command line), which may import every
layer, then ``modelbuild``, which builds the embedding model file the kernel loads (the
publisher's tool: nothing that serves imports it), then ``bench``, which drives the
product from outside as agents and operators do
and may use every other part of the tree.

Beside the layers stand parts that import nothing else of the tree: ``hooks`` and the
plugins' copies of it (``plugins``) run inside the agent with the standard library only,
``client`` is a distribution of its own, ``scripts`` are maintainers' tools. No layer
below ``bench`` imports them.

``tests`` is the one part not read: the suite exercises every layer, so it imports
whatever it tests (and the suite's settings, ``server/settings_test.py``, start its
embedded OceanBase from ``tests.oceanbase``).

An import counts wherever it is written (module level or inside a function) and so does
a dotted string naming a project module (``import_string`` paths, settings values): a
string is an arrow too, only a later one.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Lower index = lower layer. A module may import its own layer and the ones below.
LAYERS = (
    "powercontext",
    "memory",
    "experience",
    "contextpack",
    "server",
    "modelbuild",
    "bench",
)
# Each imports only itself; only the top layer (``bench``) imports them.
STANDALONE = ("hooks", "plugins", "client", "scripts")
PARTS = LAYERS + STANDALONE
# Top-level names that belong to a part: the command line of the composition root, and
# the client's package as it is imported (``client/`` is its distribution's folder).
ALIASES = {"manage": "server", "powercontext_client": "client"}


def part(module: str) -> str | None:
    """The part of the tree ``module`` belongs to; None outside it (the standard library,
    third-party packages, ``tests``)."""
    top = module.split(".")[0]
    top = ALIASES.get(top, top)
    return top if top in PARTS else None


def may_import(here: str, there: str) -> bool:
    """Whether a module of part ``here`` may import one of part ``there``."""
    if here == there or here == LAYERS[-1]:
        return True
    return here in LAYERS and there in LAYERS and LAYERS.index(there) < LAYERS.index(here)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_project_module(dotted: str) -> bool:
    """Whether ``dotted`` (possibly ending in an attribute) names a module of the repo."""
    parts = dotted.split(".")
    if len(parts) < 2 or part(dotted) is None:
        return False
    for end in range(len(parts), 1, -1):
        base = REPO.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return True
    return False


def imported_modules(path: Path, source: str, *, strings: bool = True) -> list[tuple[int, str]]:
    """(line, module) for every import in ``source`` and (with ``strings``) every dotted
    string naming a project module; relative imports resolved against ``path``."""
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
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            if is_project_module(node.value):
                found.append((node.lineno, node.value))
    return found


def upward_arrows(path: Path, source: str) -> list[str]:
    """Each import in ``source`` that runs from a part to one it may not import."""
    here = part(module_name(path))
    arrows = []
    for line, module in imported_modules(path, source):
        there = part(module)
        if here is None or there is None or may_import(here, there):
            continue
        arrows.append(
            f"{path.relative_to(REPO)}:{line}: {here} imports {module} ({there}): "
            "the arrow runs back up"
        )
    return arrows


def project_files() -> list[Path]:
    """Every Python file of the tree but the suite's."""
    files = [path for name in PARTS for path in (REPO / name).rglob("*.py")]
    return sorted([*files, *(path for path in REPO.glob("*.py") if part(path.stem))])


def test_every_folder_with_python_is_a_part() -> None:
    """A new top-level package is placed among the parts (or read as a test) before it
    can hold an arrow no one sees."""
    folders = {
        path.relative_to(REPO).parts[0]
        for path in REPO.glob("*/**/*.py")
        if not path.relative_to(REPO).parts[0].startswith(".")
    }
    assert folders - {*PARTS, "tests"} == set()


def test_no_import_runs_back_up() -> None:
    arrows = [arrow for path in project_files() for arrow in upward_arrows(path, path.read_text())]
    assert not arrows, "\n".join(arrows)


def test_every_file_of_the_tree_is_read() -> None:
    files = project_files()
    for expected in (
        "powercontext/artifacts.py",
        "memory/migrations/0001_initial.py",
        "contextpack/builder.py",
        "server/settings.py",
        "server/mcp/server.py",
        "manage.py",
        "bench/served.py",
        "hooks/powercontext_hook.py",
        "plugins/claude/scripts/powercontext_hook.py",
        "client/powercontext_client/_core.py",
        "scripts/unasync_client.py",
    ):
        assert REPO / expected in files
    assert not [path for path in files if path.relative_to(REPO).parts[0] in (".venv", "tests")]


@pytest.mark.parametrize(
    ("where", "source", "arrow"),
    [
        ("powercontext/search/sqlite.py", "from memory.values import scope_token\n", "memory"),
        ("powercontext/maintenance.py", "def f():\n    import experience.rebuild\n", "experience"),
        ("powercontext/maintenance.py", 'PATH = "memory.rebuild.memory_rebuild"\n', "memory"),
        ("powercontext/artifacts.py", "from server import health\n", "server"),
        ("memory/selectors.py", "from experience.selectors import x\n", "experience"),
        ("memory/api.py", "from .. import contextpack\n", "contextpack"),
        ("experience/selectors.py", "from contextpack.builder import ArtifactRef\n", "contextpack"),
        ("contextpack/api.py", "from server.mcp import server\n", "server"),
        ("contextpack/application.py", 'ROOT = "server.urls"\n', "server"),
        ("server/serving.py", "from bench.corpus import memories\n", "bench"),
        ("server/home.py", "from hooks.install import main\n", "hooks"),
        ("memory/api.py", "from powercontext_client import errors\n", "client"),
        ("hooks/install.py", "from powercontext import refs\n", "powercontext"),
        ("hooks/install.py", "from server import config\n", "server"),
        ("client/powercontext_client/_core.py", "from memory.values import x\n", "memory"),
        ("plugins/sync.py", "from hooks import install\n", "hooks"),
        ("manage.py", "from bench import served\n", "bench"),
    ],
)
def test_an_arrow_back_up_is_caught(where: str, source: str, arrow: str) -> None:
    (found,) = upward_arrows(REPO / where, source)
    assert f"({arrow})" in found


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("memory/rebuild.py", "from powercontext.search import search_backend\n"),
        ("contextpack/application.py", "from memory import selectors\n"),
        ("experience/admin.py", "from memory.selectors import memory_revision_cited\n"),
        ("server/urls.py", "from contextpack.preview import preview\n"),
        ("server/settings.py", 'ROOT_URLCONF = "server.urls"\n'),
        ("manage.py", 'SETTINGS = "server.settings"\n'),
        ("bench/served.py", "from server.serving import Server\n"),
        ("bench/served.py", "from hooks.powercontext_hook import capture_source_id\n"),
        ("client/powercontext_client/_core.py", "from powercontext_client import errors\n"),
        ("powercontext/api/auth.py", 'SCOPE = "memory.search"\n'),
        ("hooks/claude_user_prompt_submit.py", "from powercontext_hook import main\n"),
    ],
)
def test_an_arrow_down_or_a_name_is_not_an_arrow(where: str, source: str) -> None:
    assert upward_arrows(REPO / where, source) == []


# -- no circles ------------------------------------------------------------------------


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """{module: the project modules it imports} of the layers' modules. An import counts
    wherever it is written (a function's lazy import still ties the two modules), and it
    names the most specific module it reaches (``from powercontext.search import
    vectors`` is ``powercontext.search.vectors``, not the package's door). A dotted string
    is not counted here: settings name the WSGI application and the WSGI module names the
    settings, Django's own layout, and a string is resolved only after both are loaded."""
    modules = {module_name(path): path for path in files if part(module_name(path)) in LAYERS}

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            if ".".join(parts[:end]) in modules:
                return ".".join(parts[:end])
        return None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        found = (
            resolve(name) for _, name in imported_modules(path, path.read_text(), strings=False)
        )
        graph[module] = {name for name in found if name is not None and name != module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative: the tree is deep enough to matter for recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            following = next(edges, None)
            if following is not None:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(sorted(graph.get(following, ())))))
                elif following in on_stack:
                    low[node] = min(low[node], index[following])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(frozenset(component))
    return cycles


def test_no_module_imports_itself_through_others() -> None:
    cycles = import_cycles(import_graph(project_files()))
    assert not cycles, "\n".join(" <-> ".join(sorted(cycle)) for cycle in cycles)


def test_a_circle_is_caught() -> None:
    graph = {
        "a": {"b"},
        "b": {"c"},
        "c": {"a", "d"},
        "d": set(),
        "e": {"e", "d"},
    }
    assert import_cycles(graph) == [frozenset({"a", "b", "c"})]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_a_lazy_import_closes_a_circle(tmp_path: Path) -> None:
    """A function-level import counts: the circle the report types once made
    (``maintenance`` importing ``sources`` in a function, ``sources`` importing
    ``maintenance`` for ``CheckResult``) is found again if it comes back."""
    graph = import_graph(project_files())
    graph["powercontext.sources"] = graph["powercontext.sources"] | {"powercontext.maintenance"}
    assert any(
        {"powercontext.sources", "powercontext.maintenance"} <= cycle
        for cycle in import_cycles(graph)
    )
