"""The searches count only the query terms a search could weigh (countable_terms).

A prompt is mostly function words, and every counted term is an index lookup, so the
search leaves stop words out of the count. That is only sound while ``plan_search`` never
weighs such a term whatever its count: the property below pins that contract, the database
tests the search's answer. Recurring terms are counted: they weigh less, but they weigh.
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
from powercontext.search.analyzer import query_terms
from powercontext.search.policy import STOP_WORDS, countable_terms, plan_search
from powercontext.search.query import Query

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
terms_lists = st.lists(st.one_of(words, st.sampled_from(sorted(STOP_WORDS))), unique=True)


@given(
    terms=terms_lists,
    data=st.data(),
    documents=st.integers(min_value=0, max_value=10_000),
)
def test_the_plan_never_reads_the_count_of_a_stop_word(terms, data, documents):
    frequency = {term: data.draw(st.integers(min_value=0, max_value=documents)) for term in terms}
    recurring = frozenset(data.draw(st.lists(st.sampled_from(terms))) if terms else [])
    candidates = countable_terms(terms)
    counted = {term: frequency[term] for term in candidates}
    assert plan_search(candidates, counted, documents, recurring) == plan_search(
        terms, frequency, documents, recurring
    )


@pytest.mark.django_db
def test_search_counts_no_stop_word_and_ranks_the_question_above_the_instructions():
    scope = "counts-" + uuid.uuid4().hex
    services.memory_remember(scope_id=scope, kind="fact", text="The scheduler times out on CI.")
    services.memory_remember(scope_id=scope, kind="fact", text="Run the full test suite.")
    head = memory_head(scope_id=scope)
    query = "Run the full test suite. Why does the scheduler time out?"
    recurring = {"run", "full", "test", "suit"}  # the analyzer's stems
    table = MemoryTermStat._meta.db_table
    with CaptureQueriesContext(connection) as queries:
        hits = memory_search_at(
            scope_id=scope,
            head=head,
            query=Query(query, query_terms(query), recurring=frozenset(recurring)),
            limit=16,
        )
    # The question's own terms found an entry: the one sharing only the recurring
    # instructions is not fetched (they weigh less, and are counted to be weighed).
    assert [hit.text for hit in hits] == ["The scheduler times out on CI."]
    (count_query,) = [query["sql"] for query in queries if table in query["sql"]]
    for left_out in ("the", "why", "doe"):
        assert f"'{left_out}'" not in count_query
    for counted in ("schedul", "run", "suit"):
        assert f"'{counted}'" in count_query


@pytest.mark.django_db
def test_a_query_of_stop_words_counts_nothing_and_a_recurring_term_still_finds():
    scope = "counts-" + uuid.uuid4().hex
    services.memory_remember(scope_id=scope, kind="fact", text="Deploy on Fridays.")
    head = memory_head(scope_id=scope)
    with CaptureQueriesContext(connection) as queries:
        hits = memory_search_at(
            scope_id=scope,
            head=head,
            query=Query(
                "Please deploy it", query_terms("Please deploy it"), recurring=frozenset({"deploy"})
            ),
            limit=16,
        )
    assert [hit.text for hit in hits] == ["Deploy on Fridays."]
    with CaptureQueriesContext(connection) as queries:
        hits = memory_search_at(
            scope_id=scope, head=head, query=Query("Is it on?", query_terms("Is it on?")), limit=16
        )
    assert hits == []
    assert len(queries) == 0
