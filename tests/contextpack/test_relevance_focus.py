"""An answer speaks to what the prompt asks: an entry on the prompt's subject that does not
is left out of a pack for its focus (how much of the prompt it speaks to, token by token),
the next candidates taking its place; a search keeps it. Real model, real vector index,
both engines; then the pure rule and the token states' keeping."""

import numpy as np
import pytest

from contextpack.application import explain_context
from powercontext.search import hybrid, relevance, token_states
from powercontext.search.relevance import focus, numbers
from tests.api_calls import cited, prepare

DEPLOY_NOTES = [
    "Deploy notes: the deploy job runs from the release branch after CI is green.",
    "Deploy notes: a deploy needs two approvals in the release channel.",
    "Deploy notes: roll a deploy back with make rollback, never by reverting the tag.",
    "Deploy notes: the staging deploy happens on every merge to main.",
]
ROLLBACK = "How do I roll back a bad deploy?"


def entry_id(remembered):
    return remembered["entry"]["citation"]["entry_id"]


@pytest.mark.django_db(transaction=True)
def test_notes_on_the_subject_that_do_not_answer_leave_the_pack_not_the_search(api, remember):
    scope = "focus1"
    notes = [entry_id(remember(text, scope_id=scope)) for text in DEPLOY_NOTES]
    assert cited(prepare(api, scope, ROLLBACK)) == [notes[2]]

    # The desk's preview says why, with each candidate's focus.
    _, explanation = explain_context(scope_id=scope, query=ROLLBACK, max_bytes=8000)
    rows = {row.cited_id: row for row in explanation.candidates}
    assert rows[notes[2]].admitted
    off = f"{relevance.Verdict.OFF_FOCUS.value} (focus 0."
    assert not any(rows[other].admitted for other in (notes[0], notes[1], notes[3]))
    # The notes the decision admitted on their words left for their focus.
    assert [row for row in explanation.candidates if row.reason.startswith(off)]
    # A search keeps every entry its words find.
    body = {"scope_id": scope, "query": ROLLBACK, "limit": 8}
    hits = api.ok("/v1/memory/search", body)["hits"]
    assert set(notes) <= {hit["citation"]["entry_id"] for hit in hits}


@pytest.mark.django_db(transaction=True)
def test_an_entry_holding_the_name_the_prompt_asks_about_stays(api, remember):
    scope = "focus2"
    for text in DEPLOY_NOTES:
        remember(text, scope_id=scope)
    # It speaks to little of the question but holds the ticket the prompt names.
    named = entry_id(remember("HAR-1206 is Dana's.", scope_id=scope))
    pack = cited(prepare(api, scope, "How do I roll back a bad deploy like HAR-1206?"))
    assert named in pack
    _, explanation = explain_context(
        scope_id=scope, query="How do I roll back a bad deploy like HAR-1206?", max_bytes=8000
    )
    [row] = [row for row in explanation.candidates if row.cited_id == named]
    assert row.reason.startswith(relevance.Verdict.ANCHORED.value)


@pytest.mark.django_db(transaction=True)
def test_the_entries_states_kept_when_they_were_indexed_are_not_embedded_again(
    api, remember, embedded_texts
):
    scope = "focus3"
    for text in DEPLOY_NOTES:
        remember(text, scope_id=scope)
    prompt = "How can we roll back a broken deploy?"
    hybrid.forget_query_vectors()
    embedded_texts.clear()
    assert cited(prepare(api, scope, prompt))
    assert embedded_texts == [[prompt]]  # the prompt's segment; the entries' are kept
    # A restarted process keeps nothing: a prepare embeds its window's entries once.
    token_states.forget()
    embedded_texts.clear()
    prepare(api, scope, prompt)
    prepare(api, scope, prompt)
    [again] = embedded_texts
    assert prompt in again
    assert set(again) - {prompt} <= set(DEPLOY_NOTES)
    assert len(again) >= 3  # the window's admitted entries'
    hybrid.forget_query_vectors()


# -- the pure rule ---------------------------------------------------------------------


def _tokens(*values):
    return np.asarray(values, dtype=np.float32)


def test_a_candidate_is_compared_with_the_best_on_the_segment_it_speaks_to():
    # Two segments: instructions (repeated word for word by "rules") and a question.
    matched = {
        "rules": [_tokens(0.95, 0.95), _tokens(0.2, 0.2)],
        "answer": [_tokens(0.3, 0.3), _tokens(0.6, 0.6)],
        "near": [_tokens(0.3, 0.3), _tokens(0.5, 0.5)],
        "far": [_tokens(0.3, 0.3), _tokens(0.4, 0.4)],
    }
    admitted = [("rules", False), ("answer", False), ("near", False), ("far", False)]
    # The answer is 0.35 under the instructions' best but the best on its own segment.
    judged = relevance.off_focus(admitted, matched)
    assert judged.left_out == {"far"}
    assert judged.focus == pytest.approx({"rules": 0.95, "answer": 0.6, "near": 0.5, "far": 0.4})
    # An anchored candidate stays however far.
    anchored = [("rules", False), ("answer", False), ("near", False), ("far", True)]
    assert relevance.off_focus(anchored, matched).left_out == set()
    # Past the window: no focus, it stays.
    assert relevance.off_focus([*admitted, ("later", False)], matched).left_out == {"far"}


def test_the_lift_takes_the_windows_median_focus_away(monkeypatch):
    # Copies of a note repeating an instruction word for word, and the answer to the
    # question: the median of the instruction's segment is the copies' own focus, so they
    # lift little; the answer lifts on the question.
    monkeypatch.setattr(numbers, "FOCUS_CROWD", 0.75)
    copies = {f"copy{n}": [_tokens(0.9, 0.9), _tokens(0.1, 0.1)] for n in range(4)}
    matched = {**copies, "answer": [_tokens(0.2, 0.2), _tokens(0.5, 0.5)]}
    admitted = [(key, False) for key in matched]
    lift = relevance.off_focus(admitted, matched).lift
    assert lift["answer"] == pytest.approx(0.5 - 0.75 * 0.1)
    assert all(lift[key] == pytest.approx(0.9 - 0.75 * 0.9) for key in copies)
    # One such note alone lifts on its instruction, as it says all of it.
    alone = {
        "rules": copies["copy0"],
        "answer": matched["answer"],
        "other": [_tokens(0.2, 0.2), _tokens(0.3, 0.3)],
    }
    lift = relevance.off_focus([(key, False) for key in alone], alone).lift
    assert lift == pytest.approx({"rules": 0.75, "answer": 0.275, "other": 0.075})
    # With the whole median taken away, only how far each stands out counts.
    monkeypatch.setattr(numbers, "FOCUS_CROWD", 1.0)
    lift = relevance.off_focus(admitted, matched).lift
    assert lift["answer"] == pytest.approx(0.4)
    assert all(lift[key] == pytest.approx(0.0) for key in copies)


def test_an_answer_ranked_past_the_sixteenth_sets_the_bar_and_lifts_on_its_segment():
    # A long prompt's subject fills the first twenty places (FOCUS_WINDOW was 16): the
    # answer, ranked 21st, is compared with the window and measured against a median that
    # is not only the subject's notes.
    matched = {f"subject{n}": [_tokens(0.5, 0.5)] for n in range(20)}
    matched["answer"] = [_tokens(0.8, 0.8)]
    matched["later"] = [_tokens(0.5, 0.5)]
    admitted = [(key, False) for key in matched]
    judged = relevance.off_focus(admitted, matched)
    assert "later" in judged.left_out  # 0.3 under the answer's focus
    assert max(judged.lift, key=judged.lift.get) == "answer"
    # Within the first sixteen alone, the subject's notes set the bar: nothing is left out.
    assert relevance.off_focus(admitted[:16], matched).left_out == set()


def test_a_packs_window_takes_the_lift_order_in_the_places_it_held():
    from powercontext.search.indexes import IndexHit
    from powercontext.search.relevance.focus import _focus_order

    def item(key, score, verdict=relevance.Verdict.MEANING, focus=0.5):
        hit = IndexHit(key, 1, 1, score)
        return relevance.Considered(
            relevance.Ranked(hit, score, ("vector",)), 1, 0.5, verdict, focus=focus
        )

    considered = [
        item("subject", 0.9),
        item("left", 0.8, relevance.Verdict.OFF_FOCUS),
        item("answer", 0.7),
        item("past", 0.6, focus=None),
    ]
    # The answer lifts far more than the subject: it takes the subject's place; the
    # candidate left out and the one past the window keep theirs.
    order = _focus_order(considered, {"subject": 0.0, "left": 0.0, "answer": 0.4})
    assert [c.ranked.hit.cited_id for c in order] == ["answer", "left", "subject", "past"]
    # Lifts alike: the fused order stands.
    alike = _focus_order(considered, {"subject": 0.2, "answer": 0.2})
    assert alike == considered


def test_a_candidate_saying_a_word_no_better_one_says_stays():
    word, margin = numbers.FOCUS_WORD, numbers.FOCUS_WORD_MARGIN
    # "configure celery logging": the first answer says configure and celery; the second
    # says logging, which no better-ranked candidate says, so it stays though far under.
    matched = {
        "celery": [_tokens(0.9, 0.9, 0.2)],
        "logging": [_tokens(0.3, 0.2, word + 0.01)],
        "echo": [_tokens(0.5, 0.2, 0.2 + margin - 0.01 if word > 0.5 else 0.2)],
    }
    admitted = [("celery", False), ("logging", False), ("echo", False)]
    left_out = relevance.off_focus(admitted, matched).left_out
    assert "logging" not in left_out
    assert "echo" in left_out
    # Said, but not clearly more than a better-ranked candidate: it goes.
    matched["celery"] = [_tokens(0.9, 0.9, word + 0.01 - margin + 0.05)]
    assert "logging" in relevance.off_focus(admitted, matched).left_out


def test_the_kept_states_are_bounded_least_recently_used_first(monkeypatch):
    from powercontext.embedding import TokenStates

    token_states.forget()
    state = TokenStates(("cats",), np.zeros((1, 384), dtype=np.float16))  # 768 bytes
    monkeypatch.setattr(token_states, "KEPT_BYTES", 2 * state.states.nbytes)
    token_states.keep("model", ["one", "two"], [state, state])
    token_states.keep("model", ["one"], [state])  # used again: "two" is now the oldest
    token_states.keep("model", ["three"], [state])
    assert set(token_states._kept) == {token_states._key("model", t) for t in ("one", "three")}
    assert all(isinstance(digest, bytes) for _, digest in token_states._kept)  # never the text
    token_states.forget()


def test_matches_split_one_product_by_segment():
    unit = np.eye(3, dtype=np.float32)
    candidate = unit[[0, 2]]  # its content rows
    # Segment one: tokens along axes 0 and 1; segment two: axis 2 and a diagonal.
    diagonal = np.array([[0.6, 0.8, 0.0]], dtype=np.float32)
    found = focus.matches([unit[[0, 1]], np.vstack([unit[[2]], diagonal])], candidate)
    assert [list(tokens) for tokens in found] == [[1.0, 0.0], pytest.approx([1.0, 0.6])]
    assert focus.matches([], candidate) == []
    nothing = np.empty((0, 3), dtype=np.float32)
    assert [list(tokens) for tokens in focus.matches([unit[[0, 1]]], nothing)] == [[0.0, 0.0]]


def test_matches_of_a_window_are_each_candidates_own():
    # One product for the whole window, each candidate's columns reduced on their own: an
    # empty candidate between others, and one of a single row, keep their places.
    rng = np.random.default_rng(7)
    segments = [rng.standard_normal((n, 8)).astype(np.float32) for n in (4, 1, 6)]
    sizes = (3, 0, 5, 1, 0)
    candidates = [rng.standard_normal((n, 8)).astype(np.float32) for n in sizes]
    rows = np.concatenate(segments)
    found = focus.matches_all(segments, candidates)
    assert len(found) == len(candidates)
    for candidate, tokens in zip(candidates, found, strict=True):
        alone = (rows @ candidate.T).max(axis=1) if len(candidate) else np.zeros(len(rows))
        assert [len(t) for t in tokens] == [4, 1, 6]
        assert np.concatenate(tokens) == pytest.approx(alone, abs=1e-5)
    assert focus.matches_all([], candidates) == [[]] * len(candidates)


def test_function_words_are_not_content():
    from powercontext.embedding import TokenStates

    state = TokenStates(("how", "deploy", "the"), np.eye(3, dtype=np.float16))
    assert token_states.content(state).tolist() == [[0.0, 1.0, 0.0]]


@pytest.mark.django_db(transaction=True)
def test_the_entry_nearest_the_prompt_in_meaning_is_not_left_out_for_its_focus(api, remember):
    # The scaffold command regenerates atlantis.yaml too and speaks to more of the prompt
    # token by token; the answer is the nearest in meaning, which is no evidence that it
    # speaks to something else (relevance.numbers.FOCUS_NEAREST_KEPT).
    scope = "focus-nearest"
    answer = remember(
        "`atlantis.yaml` is generated from the stack directories by `make atlantis-yaml` "
        "(scripts/gen_atlantis.py). Commit the result; CI fails when a new stack directory "
        "has no Atlantis project.",
        scope_id=scope,
    )["entry"]["citation"]["entry_id"]
    remember(
        "Scaffold a stack with `make new-stack DIR=live/aws/staging/eu-central-1/foo`: it "
        "writes backend.tf with the right state key, providers.tf with default_tags, and "
        "regenerates atlantis.yaml.",
        scope_id=scope,
    )
    remember(
        "Terraform state lives in the S3 bucket forge-tfstate, locked by DynamoDB.", scope_id=scope
    )
    body = {
        "scope_id": scope,
        "query": "How do I regenerate atlantis.yaml after adding a stack?",
        "max_bytes": 8000,
    }
    assert answer in cited(api.ok("/v1/context/prepare", body))
