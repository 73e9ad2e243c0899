"""Near-duplicates take one slot: two active entries that say the same thing in other
words do not both fill a pack, the better-ranked one stands for both; a search still
returns both (real model, real vector index, both engines), and the pure rule."""

import numpy as np
import pytest

from contextpack.application import explain_context
from powercontext.search import relevance
from powercontext.search.relevance import near_duplicates, numbers
from tests.api_calls import cited, prepare, search_ids

pytestmark = pytest.mark.django_db(transaction=True)

# Cosine 0.91 under the shipped model (bench/duplicate_threshold.py): the same fact.
SECRET = "The webhook secret lives in the STRIPE_WEBHOOK_SECRET environment variable."
SECRET_AGAIN = "STRIPE_WEBHOOK_SECRET (an env var) holds the webhook signing secret."
# On the same subject, another fact (0.66 to the first).
API_KEY = "The Stripe API key lives in the STRIPE_API_KEY environment variable."
PROMPT = "Where do the Stripe webhook secret and the Stripe API key live?"


def entry_id(remembered):
    return remembered["entry"]["citation"]["entry_id"]


def test_two_entries_saying_the_same_thing_take_one_slot_of_a_pack(api, remember):
    scope = "dup1"
    pair = {entry_id(remember(text, scope_id=scope)) for text in (SECRET, SECRET_AGAIN)}
    distinct = entry_id(remember(API_KEY, scope_id=scope))
    remember("Deploy with make release from the main branch.", scope_id=scope)

    pack = cited(prepare(api, scope, PROMPT))
    assert distinct in pack
    assert len(pack) == 2
    [better] = pair & set(pack)
    [duplicate] = pair - {better}

    # The desk's preview says why, and which entry stands for it.
    _, explanation = explain_context(scope_id=scope, query=PROMPT, max_bytes=8000)
    order = [row.cited_id for row in explanation.candidates]
    assert order.index(better) < order.index(duplicate)
    [row] = [row for row in explanation.candidates if row.cited_id == duplicate]
    assert not row.admitted
    assert row.reason == f"{relevance.Verdict.DUPLICATE.value}: {better}"
    # A search keeps every entry its words find.
    assert pair | {distinct} <= set(search_ids(api, scope, PROMPT))


def test_entries_on_one_subject_saying_different_things_each_keep_their_slot(api, remember):
    scope = "dup2"
    found = [
        entry_id(remember(text, scope_id=scope))
        for text in (
            "Run the tests with make test.",
            "Lint with make lint.",
            "Tests need a running PostgreSQL on port 5433.",
        )
    ]
    pack = cited(prepare(api, scope, "How do I run the tests and the linter?"))
    assert found[0] in pack
    assert found[1] in pack


def _unit(*values):
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_a_near_duplicate_is_left_to_the_better_ranked_candidate():
    near = numbers.DUPLICATE_SIMILARITY + 0.01
    far = numbers.DUPLICATE_SIMILARITY - 0.01
    vectors = {
        "a": _unit(1.0, 0.0, 0.0),
        "b": _unit(near, np.sqrt(1 - near**2), 0.0),  # near a
        "c": _unit(far, 0.0, np.sqrt(1 - far**2)),  # under the threshold to a
        "e": _unit(1.0, 0.0, 0.0),  # a again
    }
    assert relevance.duplicates(["a", "b", "c", "d", "e"], vectors) == {"b": "a", "e": "a"}
    # Better-ranked first: the order decides which one stands for both.
    assert relevance.duplicates(["b", "a"], vectors) == {"a": "b"}
    # Without a vector, never a duplicate and never standing for one.
    assert relevance.duplicates(["d", "a", "e"], {k: vectors[k] for k in "ae"}) == {"e": "a"}
    assert relevance.duplicates(["a", "b"], {"b": vectors["b"]}) == {}
    # A duplicate does not stand for another: c is compared with a alone, not with b.
    chained = {"a": _unit(1.0, 0.0), "b": _unit(0.95, 0.312), "c": _unit(0.82, 0.572)}
    assert relevance.duplicates(["a", "b", "c"], chained) == {"b": "a"}
    # A longer list never changes the verdicts on its prefix.
    keys = ["a", "b", "c", "e"]
    for end in range(len(keys) + 1):
        prefix = relevance.duplicates(keys[:end], vectors)
        assert prefix == {
            k: v for k, v in relevance.duplicates(keys, vectors).items() if k in keys[:end]
        }


def test_texts_with_different_numbers_are_not_duplicates():
    assert near_duplicates.numbered_terms("the export timeout is 30 s in v2 config") == {"30", "v2"}
    vectors = {"a": _unit(1.0, 0.0), "b": _unit(1.0, 0.0), "c": _unit(1.0, 0.0)}
    numbered = {"a": frozenset({"30"}), "b": frozenset({"60"}), "c": frozenset({"30"})}
    assert relevance.duplicates(["a", "b", "c"], vectors, numbered) == {"c": "a"}
    assert relevance.Verdict.DUPLICATE not in relevance.ADMITTED
