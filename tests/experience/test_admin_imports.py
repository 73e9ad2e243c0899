"""The admin modules read other apps only through their selectors (issue 15): no admin
imports another app's admin or models."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("memory", "experience", "contextpack")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("app", ["memory", "experience"])
def test_admin_reads_other_apps_through_their_selectors(app):
    imports = _imports(ROOT / app / "admin.py")
    for other in APPS:
        if other == app:
            continue
        crossing = {name for name in imports if name.split(".")[0] == other}
        assert crossing <= {f"{other}.selectors"}, (app, crossing)
