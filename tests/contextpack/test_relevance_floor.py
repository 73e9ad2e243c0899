"""A Context Pack for a prompt nothing answers is empty, and a question wrapped in
instructions finds its entry with no history, by the segment that asks it (real model,
real vector index; the pure rules at the end)."""

import pytest

from powercontext.search.ranking import MAX_SEMANTIC_SEGMENTS, segmented, semantic_segments
from tests.api_calls import prepare, search
from tests.contextpack.packs import items

SCOPE = "scope-floor"
# A billing service's notes; several share a word with the unanswerable question below
# ("configure", "app", "mobile"), none says anything about GraphQL.
ENTRIES = [
    "Configure Celery's worker concurrency in settings/base.py, never per host.",
    "The Django app for invoices lives in billing/; keep views thin and logic in services.",
    "Mobile customers pay through the same Stripe checkout as the web app.",
    "Configure the Stripe webhook secret through STRIPE_WEBHOOK_SECRET in the .env file.",
    "The app's static files are served by WhiteNoise; run collectstatic before deploying.",
    "The dev database is PostgreSQL 16, on port 5433.",
    "Invoices are numbered per fiscal year; the UK fiscal year starts on 6 April.",
    "Configure logging in settings/logging.py; Sentry gets warnings and above.",
]
# A coding agent's instructions around the question, as a template pastes them (no
# captured history: a new scope, capture off).
WRAPPED = (
    "Before you change anything, read the notes from our earlier sessions and check what "
    "we already know. Quick question first: {question}\n\n"
    "Then carry on with the task from yesterday. Please run the full test suite before and "
    "after your change (pytest -q from the repository root), and tell me which tests you "
    "ran and what failed, if anything. Be concise. Follow the repository rules in "
    "CONTRIBUTING.md and keep the existing code style; don't reformat files you are not "
    "otherwise editing. Don't touch unrelated files, don't add new dependencies without "
    "asking, and don't commit or push anything: I will review the diff myself."
)


# transactional_db: on OceanBase the vector table's DDL (which commits) waits for the first
# write outside a transaction.
@pytest.fixture
def entries(transactional_db, remember):
    return [remember(text, scope_id=SCOPE)["entry"]["citation"]["entry_id"] for text in ENTRIES]


UNANSWERED = "How do I configure GraphQL schema stitching for the mobile app?"


def test_a_prompt_nothing_answers_gets_an_empty_pack(api, entries):
    # Its words still match entries ("configure", "app", "mobile"), but no entry comes
    # near its meaning: nothing answers it, and the pack says so.
    assert prepare(api, SCOPE, UNANSWERED)["status"] == "empty"


def test_an_explicit_search_still_returns_every_entry_with_the_words(api, entries):
    # The floor shapes only the pack: a deliberate search ranks by the query as written.
    words = [text for text in ENTRIES if "onfigure" in text or " app" in text]
    found = {hit["citation"]["entry_id"] for hit in search(api, SCOPE, UNANSWERED, limit=8)["hits"]}
    assert {entries[ENTRIES.index(text)] for text in words} <= found
    assert len(found) > 2


def test_a_prompt_the_scope_answers_keeps_every_entry_that_answers_it(api, entries):
    # Three entries answer it, each by its own words.
    query = "How do we configure Celery, logging and the Stripe webhook secret?"
    found = [item["citation"]["entry_id"] for item in items(prepare(api, SCOPE, query))]
    assert {entries[0], entries[3], entries[7]} <= set(found)


def test_a_wrapped_question_finds_its_entry_cold_by_the_segment_that_asks(api, entries):
    # Only the meaning links "pg" to "PostgreSQL"; the instructions around it dilute a
    # whole-prompt embedding below the semantic floor.
    prompt = WRAPPED.replace("{question}", "which pg release do we develop against?")
    found = [item["citation"]["entry_id"] for item in items(prepare(api, SCOPE, prompt))]
    assert entries[5] in found


def test_segments_are_the_prompts_sentences_and_lines():
    assert semantic_segments(segmented("Which port does the dev database use?")) == [
        "Which port does the dev database use?"
    ]
    assert semantic_segments(segmented("Run the tests.\nWhich port?  ")) == [
        "Run the tests.",
        "Which port?",
    ]
    # Segments without a word are not embedded.
    assert semantic_segments(segmented("Which port?\n---\n")) == ["Which port?"]


def test_boilerplate_segments_are_left_out_of_the_embedded_prompt():
    prompt = "Follow AGENTS.md and run the tests. Which port does the dev database use?"
    recurring = {"follow", "agent", "md", "run", "test"}
    assert semantic_segments(segmented(prompt), recurring) == [
        "Which port does the dev database use?"
    ]
    assert semantic_segments(segmented(prompt)) == [
        "Follow AGENTS.md and run the tests.",
        "Which port does the dev database use?",
    ]
    # Every segment boilerplate: all of them, not nothing.
    assert semantic_segments(segmented("Follow AGENTS.md and run the tests."), recurring) == [
        "Follow AGENTS.md and run the tests."
    ]


def test_a_long_log_joins_its_shortest_neighbours_and_keeps_the_question_whole():
    question = (
        "The monthly invoice batch fails in finalize_invoice with ImmutableInvoiceError "
        "since the CRM receiver was added, so why is that and how do we fix it?"
    )
    lines = [f"  at frame {n} (tasks.py:{100 + n})" for n in range(20)]
    segments = semantic_segments(segmented("\n".join([question, *lines])))
    assert len(segments) == MAX_SEMANTIC_SEGMENTS
    assert segments[0] == question
    # Every word is still embedded, in order.
    assert " ".join(segments[1:]) == " ".join(line.strip() for line in lines)
