"""What searches met of damaged vectors is kept in an object (``SearchDamage``), one per
process by default: an engine given its own notes there, and nothing else sees it."""

import logging
from dataclasses import dataclass

from powercontext.search.vector_sqlite import SqliteVectors
from powercontext.search.vectors import DAMAGE, VectorsDamaged
from powercontext.search.vectors.damage import DAMAGE_KEPT, SearchDamage


@dataclass(frozen=True)
class Index:
    name: str


INDEX = Index("notes_test")


def test_an_engine_notes_in_the_processes_object_unless_given_its_own():
    assert SqliteVectors().damage is DAMAGE
    own = SearchDamage()
    assert SqliteVectors(own).damage is own


def test_rows_are_noted_once_and_at_most_damage_kept(caplog):
    damage = SearchDamage()
    with caplog.at_level(logging.WARNING, logger="powercontext.search.vectors"):
        damage.note_rows(INDEX, {1: "all zeros"})
        damage.note_rows(INDEX, {1: "all zeros", 2: "not finite"})
        damage.note_rows(INDEX, dict.fromkeys(range(10, 10 + 2 * DAMAGE_KEPT), "all zeros"))
    assert damage.noted(INDEX) == (DAMAGE_KEPT, 0)
    assert len(caplog.records) == DAMAGE_KEPT
    assert DAMAGE.noted(INDEX) == (0, 0)  # the process's object saw none of it


def test_a_scope_is_noted_until_a_search_of_it_succeeds_or_a_rebuild_repairs():
    damage = SearchDamage()
    assert isinstance(damage.note_scope(INDEX, "scope-a", "overflow"), VectorsDamaged)
    damage.note_scope(INDEX, "scope-b", "overflow")
    assert damage.noted(INDEX) == (0, 2)
    damage.scope_searched(INDEX, "scope-a")
    assert damage.noted(INDEX) == (0, 1)
    damage.repaired(INDEX)
    assert damage.noted(INDEX) == (0, 0)


def test_the_detail_looks_at_the_rows_again():
    damage = SearchDamage()
    damage.note_rows(INDEX, {1: "all zeros", 2: "all zeros"})
    assert damage.detail(INDEX, lambda keys: {2: "all zeros"}) == (
        "1 damaged vector(s) left out of search, run manage.py rebuild_index"
    )
    assert damage.noted(INDEX) == (1, 0)
    assert damage.detail(INDEX, lambda keys: {}) is None
    damage.forget()
    assert damage.noted(INDEX) == (0, 0)
