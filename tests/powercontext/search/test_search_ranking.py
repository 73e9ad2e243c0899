"""Scoring candidates by weighted terms and prompt segments (powercontext.search.ranking).
Pure: no database."""

from powercontext.search.ranking import rank, segmented


def test_segments_are_sentences_and_lines_with_terms():
    text = "Run the tests first.\nDoes orca break staging? Keep it short.\n\n- no push"
    assert segmented(text) == [
        ("Run the tests first.", ["run", "the", "test", "first"]),
        ("Does orca break staging?", ["doe", "orca", "break", "stage"]),
        ("Keep it short.", ["keep", "it", "short"]),
        ("- no push", ["no", "push"]),
    ]


def test_a_higher_weight_ranks_first_and_ties_go_by_key():
    weights = {"orca": 3.0, "stage": 1.0}
    candidates = [("b", "stage deploy"), ("c", "orca vpn"), ("a", "stage deploy")]
    assert [key for key, _ in rank(candidates, weights)] == ["c", "a", "b"]


def test_an_entry_matching_one_segment_beats_one_sharing_a_word_with_each():
    # The instructions' words are as rare as the question's: the whole query cannot tell
    # the two entries apart, the best segment can.
    weights = dict.fromkeys(["test", "diff", "push", "orca", "stage"], 1.0)
    segments = [["test"], ["diff"], ["push"], ["orca", "stage"]]
    candidates = [("noise", "test diff push"), ("answer", "orca stage vpn")]
    assert rank(candidates, weights)[0][0] == "noise"
    assert rank(candidates, weights, segments)[0][0] == "answer"


def test_no_candidates_rank_to_nothing():
    assert rank([], {"orca": 1.0}) == []
