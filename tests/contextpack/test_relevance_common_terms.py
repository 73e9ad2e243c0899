"""A scope's main topic stays findable (powercontext.search.policy: graded, not deleted).

A term in many of a scope's entries ("billing" in a billing service), or in many of the
user's recent prompts, weighs less; it never turns "entries contain the query's words"
into zero hits or an empty pack. Only the HTTP API is used, so this holds on every search
backend (run with POWERCONTEXT_TEST_DATABASE=oceanbase too), and the shares sit around the
old cut-off (15 % of a scope of 50+ entries).
"""

import pytest

from powercontext.search import analyzer
from powercontext.search.policy import plan_search
from powercontext.search.ranking import rank
from tests.api_calls import capture_prompt, cited, prepare, search_ids

pytestmark = pytest.mark.django_db

SEARCH_LIMIT = 50  # the API's largest


def billing_text(n):
    return f"The billing job sends invoices for account {n} on the first working day."


def other_text(n):
    return f"Deployment note {n}: the staging cluster restarts nightly after backup {n}."


def seed(remember, scope, *, billing, total):
    """``total`` entries, the first ``billing`` of them about billing; their entry ids."""
    ids = [
        remember(billing_text(n), scope_id=scope)["entry"]["citation"]["entry_id"]
        for n in range(billing)
    ]
    for n in range(total - billing):
        remember(other_text(n), scope_id=scope)
    return ids


@pytest.mark.parametrize(
    ("billing", "total"),
    [(7, 50), (8, 50), (16, 100), pytest.param(151, 1000, marks=pytest.mark.slow)],
    ids=["7-of-50", "8-of-50", "16-of-100", "151-of-1000"],
)
def test_a_scopes_main_topic_is_found_by_search_and_prepare(api, remember, billing, total):
    scope = f"git:example.com/billing-{billing}-of-{total}"
    billing_ids = seed(remember, scope, billing=billing, total=total)

    found = search_ids(api, scope, "billing", SEARCH_LIMIT, mode="auto")
    assert len(found) == min(billing, SEARCH_LIMIT)
    assert set(found) <= set(billing_ids)

    prepared = prepare(api, scope, "billing invoices")
    assert prepared["status"] == "ready"
    assert cited(prepared)
    assert set(cited(prepared)) <= set(billing_ids)


def test_a_common_term_still_ranks_entries_that_also_hold_a_rarer_one_first(api, remember):
    # "billing" is in 8 of 50 entries, "refunds" in one of them: that entry comes first;
    # in a search the other billing entries still follow.
    scope = "git:example.com/billing-refunds"
    billing_ids = seed(remember, scope, billing=8, total=49)
    refund = remember("The billing job refunds duplicate invoices.", scope_id=scope)
    refund_id = refund["entry"]["citation"]["entry_id"]

    found = search_ids(api, scope, "billing refunds", SEARCH_LIMIT, mode="auto")
    assert found[0] == refund_id
    assert prepared_ids_start_with(api, scope, "billing refunds", refund_id)
    assert set(found[1:]) == set(billing_ids)


def prepared_ids_start_with(api, scope, query, entry_id):
    prepared = prepare(api, scope, query)
    return prepared["status"] == "ready" and cited(prepared)[0] == entry_id


def test_a_topic_the_user_keeps_raising_stays_in_the_pack(api, remember):
    scope = "git:example.com/billing-prompts"
    billing_ids = seed(remember, scope, billing=6, total=20)
    prompts = [
        "Why did the billing run skip two accounts?",
        "Add a retry to the billing export.",
        "Is billing covered by the nightly tests?",
        "Rename the deploy script.",
        "Where is the staging cluster configured?",
        "Bump the linter version.",
        "What does the backup job do?",
        "Fix the flaky login test.",
        "Update the README badges.",
        "Remove the unused feature flag.",
    ]
    for turn, prompt in enumerate(prompts):
        capture_prompt(api, scope, prompt, turn=str(turn))

    prepared = prepare(api, scope, "billing")
    assert prepared["status"] == "ready"
    assert set(cited(prepared)) <= set(billing_ids)
    # memory/search takes the query as written: the prompt history changes nothing there.
    assert set(search_ids(api, scope, "billing", SEARCH_LIMIT, mode="auto")) == set(billing_ids)


def test_search_ranks_by_the_weighted_terms_the_same_on_every_engine(api, remember):
    # The order is the pure scoring's over the scope's entries, whatever engine found them.
    scope = "git:example.com/ranking"
    texts = [
        *(billing_text(n) for n in range(9)),
        *(other_text(n) for n in range(38)),
        "Billing invoices are sent twice when the billing job retries.",
        "Invoices for account 3 go to the finance mailbox, not billing.",
        "The staging cluster sends billing invoices to a sandbox account.",
    ]
    ids = {}
    for text in texts:
        ids[analyzer.searchable_text(text)] = remember(text, scope_id=scope)["entry"]["citation"][
            "entry_id"
        ]
    query = "billing invoices account 3 staging"
    terms = analyzer.query_terms(query)
    indexed = [set(text.split()) for text in ids]
    frequency = {term: sum(term in text for text in indexed) for term in terms}
    plan = plan_search(terms, frequency, len(ids))
    # The rare terms find fewer entries than asked for, so the search also takes the
    # common terms' candidates: every entry holding a term of the query.
    assert 0 < sum(bool(text & set(plan.match)) for text in indexed) < 10
    candidates = [(ids[text], text) for text in ids if set(text.split()) & set(plan.weights)]
    expected = [entry_id for entry_id, _ in rank(candidates, plan.weights)][:10]

    # The lexical channel's order (hybrid adds the semantic channel's on top).
    assert search_ids(api, scope, query, limit=10, mode="fts") == expected
