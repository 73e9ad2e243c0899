"""Segmenting a prompt for the semantic channel (``ranking.semantic_segments``) gives the
same segments as the quadratic join it replaced, in time linear up to a log factor. Pure:
no database."""

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.search import ranking
from powercontext.search.ranking import MAX_SEMANTIC_SEGMENTS, semantic_segments


def joined_the_old_way(segments: list[str], most: int) -> list[str]:
    """The join as it was (issue 27, item 4): the leftmost adjacent pair shortest
    together, found by scanning every pair again after each join."""
    segments = list(segments)
    while len(segments) > most:
        joined = min(
            range(len(segments) - 1), key=lambda i: len(segments[i]) + len(segments[i + 1])
        )
        segments[joined : joined + 2] = [f"{segments[joined]} {segments[joined + 1]}"]
    return segments


# Few distinct lengths, so that ties (which pair joins first) are common.
short_segments = st.lists(st.text(alphabet="ab", min_size=1, max_size=4), min_size=0, max_size=40)


@settings(max_examples=500, deadline=None)
@given(segments=short_segments, most=st.integers(min_value=1, max_value=10))
def test_the_join_is_the_old_one(segments, most):
    assert ranking._join_shortest_neighbours(list(segments), most) == joined_the_old_way(
        segments, most
    )


lines = st.text(alphabet="ab .?\n", min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(text=st.lists(lines, max_size=30).map("\n".join))
def test_the_segments_of_a_prompt_are_the_old_ones(text):
    parts = [part.strip() for part in ranking._SEGMENT_BREAK.split(text)]
    worded = [part for part in parts if ranking.analyzer.query_terms(part)]
    assert semantic_segments(ranking.segmented(text)) == joined_the_old_way(
        worded, MAX_SEMANTIC_SEGMENTS
    )


def test_a_column_of_one_letter_lines_is_joined_into_eight_segments():
    # The prompt of issue 27: 4,096 one-letter lines, 8,191 characters.
    text = "\n".join(["a"] * 4096)
    segments = semantic_segments(ranking.segmented(text))
    assert len(segments) == MAX_SEMANTIC_SEGMENTS
    assert " ".join(segments) == " ".join(["a"] * 4096)
    assert segments == joined_the_old_way(["a"] * 4096, MAX_SEMANTIC_SEGMENTS)


# Letters, CJK, marks, digits, punctuation that ends a sentence, every kind of whitespace.
prompt_text = st.text(
    st.sampled_from("aZé\u0301ßİ支付の設定에 1_-/.?!;:\n\t\r\u3000\u00a0"), max_size=80
)


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(prompt_text, st.text(max_size=80)))
def test_the_segments_tokens_are_the_prompts_tokens(text):
    # Query.prompt reads the prompt's terms from its segments: one pass, not three. That
    # holds because segments split at whitespace, which no token runs across.
    tokens = [token for _, part in ranking.segmented(text) for token in part]
    assert tokens == ranking.analyzer.tokens(text)
