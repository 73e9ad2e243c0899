"""A user's recurring instructions are not searched (powercontext.search.policy).

The hook captures every prompt into the scope's source journal. Once the scope has enough
earlier prompts, a term in a large enough share of them is boilerplate: a Context Pack
does not search it, so entries that share only the user's instructions stay out of the
pack. Only the HTTP API is used, so this holds for every search backend.
"""

import pytest

from powercontext.search.policy import MIN_PROMPTS_FOR_RECURRING
from tests.api_calls import capture_prompt, cited, prepare

pytestmark = pytest.mark.django_db

SCOPE = "git:example.com/team/prompt-history"
SESSION = "session-1"

TEMPLATE = (
    "Before you change anything, read the notes from our earlier sessions. {question}\n\n"
    "Then run the full test suite, review the diff yourself and leave the branch "
    "uncommitted. Keep answers short and use bullet points."
)
QUESTION = "Does orca have anything to do with the staging deploy hanging?"
TARGET = "Deploys to staging need the VPN profile named orca loaded first."
EARLIER_QUESTIONS = [
    "Why is the payments webhook check red on Mondays?",
    "Where does the invoice exporter write its CSV files?",
    "Which port does the metrics sidecar listen on?",
    "How do we rotate the signing key for the mobile app?",
    "What broke the nightly importer last week?",
    "Who owns the billing dashboard?",
    "When was the Kafka cluster upgraded?",
]
# Entries an agent really keeps, in the vocabulary of the user's template.
BOILERPLATE = [
    "Read the notes from earlier sessions before you change anything.",
    "Run the full test suite before you report back.",
    "Review the diff yourself before anything is merged.",
    "Leave the branch uncommitted at the end of a task.",
    "Keep answers short; bullet points are fine.",
]


def capture_earlier_prompts(api, count, scope=SCOPE):
    for turn, question in enumerate(EARLIER_QUESTIONS[:count]):
        capture_prompt(
            api, scope, TEMPLATE.format(question=question), session=SESSION, turn=str(turn)
        )


@pytest.fixture
def memory(remember):
    boilerplate = {
        remember(text, scope_id=SCOPE)["entry"]["citation"]["entry_id"] for text in BOILERPLATE
    }
    target = remember(TARGET, scope_id=SCOPE)["entry"]["citation"]["entry_id"]
    return target, boilerplate


def test_without_earlier_prompts_the_instructions_pull_in_their_entries(api, memory):
    target, boilerplate = memory
    found = cited(prepare(api, SCOPE, TEMPLATE.format(question=QUESTION)))
    assert target in found
    assert set(found) & boilerplate


def test_instructions_in_every_earlier_prompt_are_not_searched(api, memory):
    target, _ = memory
    capture_earlier_prompts(api, MIN_PROMPTS_FOR_RECURRING)
    assert cited(prepare(api, SCOPE, TEMPLATE.format(question=QUESTION))) == [target]


def test_short_replies_between_the_templated_prompts_do_not_hide_the_instructions(api, memory):
    # Agent sessions alternate real requests with "yes, go ahead" and "continue".
    target, _ = memory
    for turn, question in enumerate(EARLIER_QUESTIONS[:MIN_PROMPTS_FOR_RECURRING]):
        capture_prompt(
            api, SCOPE, TEMPLATE.format(question=question), session=SESSION, turn=f"{turn}"
        )
        capture_prompt(api, SCOPE, "Yes, go ahead.", session=SESSION, turn=f"{turn}-yes")
        capture_prompt(api, SCOPE, "Continue.", session=SESSION, turn=f"{turn}-continue")
    assert cited(prepare(api, SCOPE, TEMPLATE.format(question=QUESTION))) == [target]


def test_too_few_earlier_prompts_change_nothing(api, memory):
    target, boilerplate = memory
    capture_earlier_prompts(api, MIN_PROMPTS_FOR_RECURRING - 1)
    found = cited(prepare(api, SCOPE, TEMPLATE.format(question=QUESTION)))
    assert target in found
    assert set(found) & boilerplate


def test_the_prompt_being_prepared_may_already_be_captured(api, memory):
    # The hook captures and prepares at the same time; either may reach the server first,
    # and the pack must not depend on which did. One prompt short of a history, the
    # prompt's own capture must not complete it.
    capture_earlier_prompts(api, MIN_PROMPTS_FOR_RECURRING - 1)
    prompt = TEMPLATE.format(question=QUESTION)
    before = cited(prepare(api, SCOPE, prompt))
    capture_prompt(api, SCOPE, prompt, session=SESSION, turn="now")
    assert cited(prepare(api, SCOPE, prompt)) == before
    assert set(before) & memory[1]


def test_a_prompt_repeated_word_for_word_still_finds_its_memory(api, memory):
    target, _ = memory
    prompt = f"What about orca and staging? {QUESTION}"
    for turn in range(2 * MIN_PROMPTS_FOR_RECURRING):
        capture_prompt(api, SCOPE, prompt, session=SESSION, turn=str(turn))
    assert cited(prepare(api, SCOPE, prompt)) == [target]


def test_another_scopes_prompts_do_not_count(api, memory):
    target, boilerplate = memory
    capture_earlier_prompts(api, len(EARLIER_QUESTIONS), scope="git:example.com/team/other")
    found = cited(prepare(api, SCOPE, TEMPLATE.format(question=QUESTION)))
    assert target in found
    assert set(found) & boilerplate


def test_memory_search_is_not_a_prompt_and_searches_every_term(api, memory):
    # An explicit search is a deliberate query: the user's prompt habits do not prune it.
    _, boilerplate = memory
    capture_earlier_prompts(api, len(EARLIER_QUESTIONS))
    result = api.ok(
        "/v1/memory/search",
        {"scope_id": SCOPE, "query": TEMPLATE.format(question=QUESTION), "limit": 10},
    )
    assert {hit["citation"]["entry_id"] for hit in result["hits"]} & boilerplate
