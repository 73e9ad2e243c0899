"""The docs name the code they describe: every file (``search/query.py``, ``chain.py``)
and every dotted name (``memory.selectors.memory_search_at``) a page of ``docs/`` or a
README puts in backticks is there. A rename that leaves a page behind fails here, so
``docs/design.md`` keeps matching the code."""

import importlib
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md", *ROOT.glob("*/README.md")])
# The packages a dotted name may start with: the product's own.
PACKAGES = ("powercontext", "memory", "experience", "contextpack", "server", "modelbuild")
# A page may name a path as it stands below one of these, as the docs' wing sections do.
BASES = (
    *("", "powercontext/", "server/", "tests/", "bench/", "hooks/", "plugins/"),
    *("client/", "client/powercontext_client/"),
)
# Dotted names in backticks that are not code: the hook's diagnostic event names.
NOT_CODE = {"powercontext.claude.recall"}
# The history of the decision quotes files and numbers that have since gone, on purpose.
HISTORY = {"relevance-history.md"}

_PATH = re.compile(r"`([A-Za-z0-9_./-]+\.py)(?::[\w.]+)?`")
_DOTTED = re.compile(rf"`((?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?`")


@cache
def tracked() -> frozenset[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return frozenset(listed.split())


def path_exists(name: str) -> bool:
    files = tracked()
    if "/" not in name:  # a bare file name: somewhere in the repository
        return any(path == name or path.endswith("/" + name) for path in files)
    return any(base + name in files for base in BASES)


def resolves(dotted: str) -> bool:
    """``a.b.c``: the longest importable module, then attributes from there. Two parts
    are a model's label when the second is capitalised (``experience.Candidate``);
    otherwise they name a check or a record type (``memory.versions``), not code."""
    parts = dotted.split(".")
    if len(parts) == 2:
        if not parts[1][:1].isupper():
            return True
        from django.apps import apps

        try:
            apps.get_model(dotted)
        except LookupError:
            return False
        return True
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def named(pattern: re.Pattern) -> list[tuple[str, str]]:
    return sorted(
        {
            (page.relative_to(ROOT).as_posix(), match)
            for page in PAGES
            if page.name not in HISTORY
            for match in pattern.findall(page.read_text(encoding="utf-8"))
        }
    )


@pytest.mark.parametrize(("page", "name"), named(_PATH))
def test_every_file_a_page_names_is_there(page, name):
    assert path_exists(name), f"{page} names {name}, which is not in the repository"


@pytest.mark.parametrize(("page", "name"), named(_DOTTED))
def test_every_dotted_name_a_page_gives_resolves(page, name):
    assert name in NOT_CODE or resolves(name), f"{page} names {name}, not in the code"


def test_a_name_that_is_gone_fails():
    assert not path_exists("search/no_such_module.py")
    assert not resolves("powercontext.search.query.no_such_function")
    assert not resolves("experience.NoSuchModel")
    assert resolves("powercontext.chain.Walk")
    assert resolves("experience.Candidate")
