"""The Context Pack with the semantic channel: what the words miss is found by meaning,
and the user's boilerplate is left out of the embedded prompt (real model, real vector
index)."""

import pytest

from tests.api_calls import prepare
from tests.contextpack.packs import items

SCOPE = "scope-semantic"
ENTRIES = [
    "The dev database is PostgreSQL 16 on port 5433; the test database is on 5434.",
    "Deploy notes: the deploy job runs from the release branch after CI is green.",
    "Deploy notes: a deploy needs two approvals in the release channel.",
    "Deploy notes: roll a deploy back with make rollback, never by reverting the tag.",
    "Deploy notes: the staging deploy happens on every merge to main.",
]


# transactional_db: on OceanBase the vector table's DDL (which commits) waits for the first
# write outside a transaction.
@pytest.fixture
def entries(transactional_db, remember):
    return [remember(text, scope_id=SCOPE)["entry"]["citation"]["entry_id"] for text in ENTRIES]


def test_a_paraphrase_finds_the_entry_its_words_miss(api, entries):
    found = [item["citation"]["entry_id"] for item in items(prepare(api, SCOPE, "which pg port?"))]
    assert found[0] == entries[0]


def test_a_prompt_the_scope_answers_gets_its_answer_without_the_other_deploy_notes(api, entries):
    # The other deploy notes are on the prompt's subject without answering it: they leave
    # for their focus (relevance.off_focus); test_relevance_focus.py has the details.
    found = [
        item["citation"]["entry_id"]
        for item in items(prepare(api, SCOPE, "How do I roll back a bad deploy?"))
    ]
    assert found == [entries[3]]
