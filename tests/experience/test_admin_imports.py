"""The admin reads other apps only through their selectors (issue 15): no admin module
imports another app's admin or models, and none reaches a model by name instead.

Every ``<app>/admin.py`` is checked, and the pack preview (``contextpack/preview.py``, an
admin page without an admin module). From a family (Memory, Experience, the Context Pack)
an admin may import only the other family's ``selectors``; from the kernel anything but
its ``models`` and its ``admin`` (its selectors, the desk's shared pieces, visible text).
"""

import ast
from pathlib import Path

import pytest

from tests.powercontext.test_layers import imported_modules, module_name

REPO = Path(__file__).resolve().parents[2]
KERNEL = "powercontext"
FAMILIES = ("memory", "experience", "contextpack")
APPS = (KERNEL, *FAMILIES)


def admin_modules() -> list[Path]:
    found = [path for app in APPS for path in (REPO / app).rglob("admin.py")]
    return sorted([*found, REPO / "contextpack" / "preview.py"])


def _forbidden(owner: str, module: str) -> str | None:
    """Why an admin module of ``owner`` may not import ``module``; None if it may."""
    parts = module.split(".")
    other = parts[0]
    if other not in APPS or other == owner:
        return None
    if "admin" in parts[1:]:
        return "another app's admin"
    if other == KERNEL:
        return "the kernel's models" if parts[1:2] == ["models"] else None
    return None if parts[1:2] == ["selectors"] else f"{other} beyond its selectors"


def crossings(path: Path, source: str) -> list[str]:
    """Each import (or model looked up by name) in ``source`` by which the admin module
    at ``path`` reads another app other than through its selectors."""
    owner = module_name(path).split(".")[0]
    found = [
        f"{path.relative_to(REPO)}:{line}: {module} ({why})"
        for line, module in imported_modules(path, source)
        if (why := _forbidden(owner, module)) is not None
    ]
    for node in ast.walk(ast.parse(source)):
        # apps.get_model("memory", "MemoryEntryVersion") is an import under another name.
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get_model"
        ):
            found.append(f"{path.relative_to(REPO)}:{node.lineno}: a model looked up by name")
    return found


def test_every_admin_module_is_read():
    names = {path.relative_to(REPO).as_posix() for path in admin_modules()}
    assert {
        "powercontext/admin.py",
        "memory/admin.py",
        "experience/admin.py",
        "contextpack/preview.py",
    } <= names


def test_admin_reads_other_apps_through_their_selectors():
    found = [line for path in admin_modules() for line in crossings(path, path.read_text())]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("experience/admin.py", "from memory.admin import entry_version_link\n"),
        ("experience/admin.py", "from memory import admin\n"),
        ("memory/admin.py", "import powercontext.admin\n"),
        ("experience/admin.py", "from powercontext.models import ArtifactRevision\n"),
        ("memory/admin.py", "from powercontext import models\n"),
        ("experience/admin.py", "from memory.models import MemoryEntryVersion\n"),
        ("experience/admin.py", "from memory.values import CHANGE_OP_WIRE\n"),
        ("contextpack/preview.py", "def f():\n    from experience.models import Candidate\n"),
        ("powercontext/admin.py", "from memory.admin import entry_version_link\n"),
        (
            "experience/admin.py",
            'from django.apps import apps\nM = apps.get_model("memory", "MemoryEntryVersion")\n',
        ),
    ],
)
def test_a_read_around_the_selectors_is_caught(where, source):
    assert crossings(REPO / where, source)


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("experience/admin.py", "from memory.selectors import memory_revision_cited\n"),
        ("experience/admin.py", "from powercontext.selectors import source_get\n"),
        ("memory/admin.py", "from powercontext.desk import ScopeFilter, ReadOnlyAdmin\n"),
        ("experience/admin.py", "from .models import Experience\n"),
        ("memory/admin.py", "from memory.models import MemoryEntryVersion\n"),
        ("powercontext/admin.py", "from powercontext.models import SourceRecord\n"),
        ("experience/admin.py", "from django.contrib import admin\n"),
    ],
)
def test_a_read_through_selectors_or_of_its_own_app_passes(where, source):
    assert crossings(REPO / where, source) == []
