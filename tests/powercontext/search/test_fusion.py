"""Fusing lexical and semantic candidates (powercontext.search.fusion)."""

from hypothesis import given
from hypothesis import strategies as st

from powercontext.search import fusion
from powercontext.search.fusion import LEXICAL, SEMANTIC, fuse, with_focus


def test_a_candidate_of_one_channel_is_kept_and_says_which() -> None:
    fused = fuse([("a", 4.0), ("b", 2.0)], [("c", 0.9), ("a", 0.5)])
    by_key = {hit.key: hit for hit in fused}
    assert set(by_key) == {"a", "b", "c"}
    assert by_key["a"].channels == (LEXICAL, SEMANTIC)
    assert by_key["b"].channels == (LEXICAL,)
    assert by_key["c"].channels == (SEMANTIC,)


def test_both_channels_agreeing_beats_either_alone() -> None:
    fused = fuse([("both", 3.0), ("words", 3.0)], [("both", 0.8), ("meaning", 0.8), ("far", 0.1)])
    assert fused[0].key == "both"
    assert fused[0].score == 1.0


def test_scales_are_per_query_and_lexical_zero_means_no_match() -> None:
    # Lexical is scaled by its best (2.0 -> 0.5); semantic between the pool's weakest and
    # best similarity (0.6 -> 0.5).
    fused = {
        hit.key: hit.score
        for hit in fuse([("a", 4.0), ("b", 2.0)], [("a", 0.2), ("b", 0.6), ("c", 1.0)])
    }
    assert fused == {"a": 0.5, "b": 0.5, "c": 0.5}


def test_ties_break_by_key_and_one_channel_alone_ranks_as_that_channel() -> None:
    assert [hit.key for hit in fuse([("b", 1.0), ("a", 1.0)], [])] == ["a", "b"]
    assert [hit.key for hit in fuse([], [("x", 0.3), ("y", 0.9)])] == ["y", "x"]
    assert fuse([], []) == []


def test_an_exact_tie_goes_by_the_channels_evidence_not_by_the_random_key() -> None:
    # The best of the words alone and the best of the meaning alone both score 0.5; a key
    # is an entry's random id, so the order must not follow it (it did: "a" first).
    words_a = fuse([("a", 2.0)], [("b", 0.9), ("far", 0.1)])
    assert [hit.score for hit in words_a[:2]] == [0.5, 0.5]
    assert [hit.key for hit in words_a[:2]] == ["b", "a"]
    words_b = fuse([("b", 2.0)], [("a", 0.9), ("far", 0.1)], ties_by_meaning=False)
    assert [hit.key for hit in words_b[:2]] == ["b", "a"]
    # Candidates equal on every score are the one case the key decides.
    both = fuse([("a", 2.0), ("b", 2.0)], [("b", 0.9), ("a", 0.9), ("far", 0.1)])
    assert [hit.key for hit in both[:2]] == ["a", "b"]


def test_the_semantic_weight_moves_the_order() -> None:
    lexical, semantic = [("w", 5.0), ("m", 1.0)], [("m", 0.9), ("w", 0.1)]
    assert fuse(lexical, semantic, semantic_weight=0.2)[0].key == "w"
    assert fuse(lexical, semantic, semantic_weight=0.8)[0].key == "m"


@given(
    st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0.0, 50.0), max_size=8),
    st.dictionaries(st.text(min_size=1, max_size=3), st.floats(-1.0, 1.0), max_size=8),
)
def test_no_candidate_vanishes_and_scores_stay_in_range(lexical, semantic) -> None:
    fused = fuse(lexical.items(), semantic.items())
    assert {hit.key for hit in fused} == lexical.keys() | semantic.keys()
    assert all(0.0 <= hit.score <= 1.0 + 1e-9 for hit in fused)
    assert [hit.score for hit in fused] == sorted((hit.score for hit in fused), reverse=True)


def test_the_focus_reorders_a_window_of_near_scores() -> None:
    # Two turns that name the speaker score alike; the one that speaks to the question
    # (the best focus) comes first, and one ahead by more than the focus weight stays.
    window = [("first", 1.0, 0.30), ("subject", 0.46, 0.35), ("answer", 0.45, 0.70)]
    assert with_focus(window) == ["first", "answer", "subject"]
    assert with_focus([("a", 0.9, 0.2), ("b", 0.1, 0.9)]) == ["a", "b"]


def test_equal_focus_keeps_the_fused_order() -> None:
    window = [("c", 0.9, 0.5), ("a", 0.5, 0.5), ("b", 0.5, 0.5)]
    assert with_focus(window) == ["c", "a", "b"]
    assert with_focus([]) == []


def test_the_focus_weight_moves_the_order(monkeypatch) -> None:
    window = [("words", 0.8, 0.2), ("focus", 0.5, 0.6)]
    monkeypatch.setattr(fusion, "FOCUS_WEIGHT", 0.2)
    assert with_focus(window) == ["words", "focus"]
    monkeypatch.setattr(fusion, "FOCUS_WEIGHT", 0.5)
    assert with_focus(window) == ["focus", "words"]


@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(-1.0, 1.0)), max_size=16).map(
        lambda rows: [(str(at), score, focus) for at, (score, focus) in enumerate(rows)]
    )
)
def test_the_focus_order_keeps_every_candidate(window) -> None:
    assert sorted(with_focus(window)) == sorted(key for key, _, _ in window)
