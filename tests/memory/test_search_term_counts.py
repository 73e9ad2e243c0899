"""The searches count only the query terms that term selection could keep (countable_terms).

A prompt is mostly function words and the user's recurring instructions, and every counted
term is an index lookup, so the search leaves stop words and recurring terms out of the
count. That is only sound while ``select_terms`` never searches such a term whatever its
count: the property below pins that contract, the database test the search's answer.
"""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from memory import services
from memory.models import MemoryTermStat
from memory.selectors import memory_head, memory_search_at
from powercontext.analyzer import query_terms
from powercontext.search.policy import STOP_WORDS, countable_terms, select_terms

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
terms_lists = st.lists(st.one_of(words, st.sampled_from(sorted(STOP_WORDS))), unique=True)


@given(
    terms=terms_lists,
    data=st.data(),
    documents=st.integers(min_value=0, max_value=10_000),
)
def test_selection_never_reads_the_count_of_a_stop_word_or_a_recurring_term(terms, data, documents):
    frequency = {term: data.draw(st.integers(min_value=0, max_value=documents)) for term in terms}
    recurring = frozenset(data.draw(st.lists(st.sampled_from(terms))) if terms else [])
    candidates = countable_terms(terms, recurring)
    counted = {term: frequency[term] for term in candidates}
    assert select_terms(candidates, counted, documents, recurring) == select_terms(
        terms, frequency, documents, recurring
    )


@pytest.mark.django_db
def test_search_counts_only_terms_it_could_search_and_finds_the_same_entry():
    scope = "counts-" + uuid.uuid4().hex
    services.memory_remember(scope_id=scope, kind="fact", text="The scheduler times out on CI.")
    services.memory_remember(scope_id=scope, kind="fact", text="Run the full test suite.")
    head = memory_head(scope_id=scope)
    query = "Run the full test suite. Why does the scheduler time out?"
    recurring = {"run", "full", "test", "suit"}  # the analyzer's stems
    table = MemoryTermStat._meta.db_table
    with CaptureQueriesContext(connection) as queries:
        hits = memory_search_at(
            scope_id=scope, head=head, terms=query_terms(query), limit=16, recurring=recurring
        )
    assert [hit.text for hit in hits] == ["The scheduler times out on CI."]
    (count_query,) = [query["sql"] for query in queries if table in query["sql"]]
    for left_out in ("the", "why", "doe", "run", "full", "test", "suit"):
        assert f"'{left_out}'" not in count_query
    assert "'schedul'" in count_query


@pytest.mark.django_db
def test_a_query_of_stop_words_and_recurring_terms_counts_nothing():
    scope = "counts-" + uuid.uuid4().hex
    services.memory_remember(scope_id=scope, kind="fact", text="Deploy on Fridays.")
    head = memory_head(scope_id=scope)
    with CaptureQueriesContext(connection) as queries:
        hits = memory_search_at(
            scope_id=scope,
            head=head,
            terms=query_terms("Please deploy it"),
            limit=16,
            recurring={"deploy"},
        )
    assert hits == []
    assert len(queries) == 0
