"""A scope's lexical candidates are its own: which ones the engine's cut keeps does not
depend on what other scopes hold (``powercontext.search.query._scope_cut``).

The engine orders its matches by its own relevance, whose term counts span every scope of
the table. With more matches than the candidate pool, the pool is cut by the scope's own
term counts from the engine's best LEXICAL_REACH: up to that many matches, another scope
filling up with one of the query's words changes nothing here.
"""

import uuid

import pytest

from memory import services
from memory.selectors import memory_head, memory_search_at
from powercontext.search.analyzer import query_terms
from powercontext.search.policy import CANDIDATE_POOL
from powercontext.search.query import Query
from powercontext.search.relevance import numbers

QUESTION = "alpha beta"


def _candidates(scope: str) -> list[str]:
    considered = []
    memory_search_at(
        scope_id=scope,
        head=memory_head(scope_id=scope),
        query=Query(QUESTION, query_terms(QUESTION)),
        limit=16,
        verdicts=considered,
    )
    return sorted(item.ranked.hit.cited_id for item in considered)


@pytest.mark.django_db
def test_a_scopes_lexical_candidates_do_not_change_when_another_scope_fills_up():
    mine, other = "cut-" + uuid.uuid4().hex, "cut-" + uuid.uuid4().hex
    each = 40  # alpha entries and beta entries: more matches than the pool, fewer than the reach
    assert CANDIDATE_POOL < 2 * each <= numbers.LEXICAL_REACH
    for at in range(each):
        # Lengths vary, so that the scores tell the entries apart.
        filler = " ".join(f"w{at}x{n}" for n in range(at % 7))
        services.memory_remember(scope_id=mine, kind="fact", text=f"alpha {filler} note {at}")
        services.memory_remember(scope_id=mine, kind="fact", text=f"beta {filler} item {at}")
    before = _candidates(mine)
    assert len(before) == CANDIDATE_POOL
    # Another scope makes "alpha" common in the table: the engine's relevance now prefers
    # the beta entries everywhere.
    for at in range(300):
        services.memory_remember(scope_id=other, kind="fact", text=f"alpha elsewhere {at}")
    assert _candidates(mine) == before
