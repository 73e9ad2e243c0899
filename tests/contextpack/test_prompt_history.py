"""Reading a scope's recent prompts back from the source journal (contextpack.prompt_history)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextpack import prompt_history
from contextpack.limits import QUERY_MAX_CHARS
from contextpack.prompt_history import recent_prompt_terms
from powercontext.search.analyzer import query_terms
from powercontext.search.policy import PROMPT_HISTORY
from powercontext.sources import source_capture

pytestmark = pytest.mark.django_db

SCOPE = "scope-a"


def capture(prompt, number, scope_id=SCOPE):
    source_capture(scope_id=scope_id, source_id=f"prompt:{number}", content=prompt)


def test_newest_first_at_most_the_window_and_only_this_scope():
    for number in range(PROMPT_HISTORY + 3):
        capture(f"prompt number{number}", number)
    capture("another scope's prompt", 99, scope_id="scope-b")

    prompts = recent_prompt_terms(scope_id=SCOPE, query="something else")
    assert len(prompts) == PROMPT_HISTORY
    newest = PROMPT_HISTORY + 2
    assert [prompt - {"prompt"} for prompt in prompts[:2]] == [
        {f"number{newest}"},
        {f"number{newest - 1}"},
    ]
    assert prompts[0] == frozenset(query_terms(f"prompt number{newest}"))


def test_the_prompt_being_prepared_is_left_out_even_repeated():
    for number in range(3):
        capture("Run the tests, then tell me about orca.", number)
    capture("Run the tests, then tell me about the cache.", 3)
    prompts = recent_prompt_terms(scope_id=SCOPE, query="Run the tests, then tell me about orca.")
    assert prompts == [frozenset(query_terms("Run the tests, then tell me about the cache."))]


def test_a_prompt_cut_to_the_query_limit_is_recognised_by_its_start():
    # The hook sends the first QUERY_MAX_CHARS characters and captures the whole prompt.
    prompt = "word " * (QUERY_MAX_CHARS // 5) + "and then the tail the query never saw"
    capture(prompt, 1)
    capture(prompt[:QUERY_MAX_CHARS] + " but a different tail", 2)
    assert recent_prompt_terms(scope_id=SCOPE, query=prompt[:QUERY_MAX_CHARS]) == []
    # A shorter query is a whole prompt: a longer captured prompt is another prompt.
    assert len(recent_prompt_terms(scope_id=SCOPE, query="word word")) == 2


def test_an_empty_journal_has_no_history():
    assert recent_prompt_terms(scope_id=SCOPE, query="anything") == []


def test_only_the_start_a_query_could_hold_is_analysed():
    capture("word " * (QUERY_MAX_CHARS // 5) + "tailword", 1)
    [terms] = recent_prompt_terms(scope_id=SCOPE, query="another prompt")
    assert "word" in terms
    assert "tailword" not in terms


def test_the_per_process_cache_of_analysed_prompts_is_bounded(monkeypatch):
    monkeypatch.setattr(prompt_history, "_CACHE_SIZE", 3)
    monkeypatch.setattr(prompt_history, "_cache", type(prompt_history._cache)())
    for number in range(6):
        capture(f"prompt number{number}", number)
    assert len(recent_prompt_terms(scope_id=SCOPE, query="x")) == 6
    assert len(prompt_history._cache) == 3


def test_a_payload_is_read_once_per_process(monkeypatch):
    # Payloads can be 200,000 characters: later prepares read only the hashes.
    monkeypatch.setattr(prompt_history, "_cache", type(prompt_history._cache)())
    for number in range(3):
        capture(f"prompt number{number}", number)
    with CaptureQueriesContext(connection) as first:
        recent_prompt_terms(scope_id=SCOPE, query="x")
    with CaptureQueriesContext(connection) as again:
        assert len(recent_prompt_terms(scope_id=SCOPE, query="x")) == 3
    assert sum("payload FROM" in query["sql"] for query in first.captured_queries) == 1
    assert [
        query["sql"] for query in again.captured_queries if "payload FROM" in query["sql"]
    ] == []
