"""The families reach the search wing through its face (``powercontext.search``) and a
handful of its names: the declared index (``FamilyIndex``: search it, keep it, check
it), the query and what a search answers. Anything more is the wing's business leaking
into a family."""

import pytest

from tests.powercontext.test_layers import REPO, imported_modules

FAMILIES = ("memory", "experience", "contextpack")
HANDFUL = 5


def search_names(family: str) -> dict[str, list[str]]:
    """{name reached in ``powercontext.search``: where} over the family's files,
    migrations included."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / family).rglob("*.py")):
        for line, module in imported_modules(path, path.read_text(), strings=False):
            if module == "powercontext.search" or module.startswith("powercontext.search."):
                found.setdefault(module, []).append(f"{path.relative_to(REPO)}:{line}")
    return found


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_imports_a_handful_of_names_from_the_face(family: str) -> None:
    names = search_names(family)
    behind = {
        name: where
        for name, where in names.items()
        if name.count(".") != 2  # powercontext.search.<name>, nothing deeper
    }
    assert not behind, f"{family} reaches behind the face: {behind}"
    assert len(names) <= HANDFUL, f"{family} imports {sorted(names)}"


def test_the_count_sees_every_import_form(tmp_path) -> None:
    """A name imported inside a function, from a submodule, or as a module is counted."""
    source = (
        "from powercontext.search import Query\n"
        "from powercontext.search.policy import recurring_terms\n"
        "def f():\n"
        "    import powercontext.search.vectors\n"
    )
    modules = {
        module for _, module in imported_modules(REPO / "memory" / "x.py", source, strings=False)
    }
    assert modules == {
        "powercontext.search.Query",
        "powercontext.search.policy.recurring_terms",
        "powercontext.search.vectors",
    }
