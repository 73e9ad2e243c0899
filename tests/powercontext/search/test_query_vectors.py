"""The query side of the semantic channel (``hybrid.query_vectors``): a prompt's segments
are embedded once, and a segment seen lately is not embedded again."""

import pytest

from powercontext import embedding
from powercontext.search import hybrid


@pytest.fixture
def calls(embedded_texts):
    """The texts each call of the real model embeds, from an empty cache."""
    hybrid.forget_query_vectors()
    yield embedded_texts
    hybrid.forget_query_vectors()


def test_a_segment_seen_lately_is_not_embedded_again_and_keeps_its_vector(calls):
    instructions = "Run the tests first and keep the diff small."
    first = hybrid.query_vectors([instructions, "Why is the billing export slow?"])
    second = hybrid.query_vectors(["Which port does PostgreSQL use?", instructions])

    assert calls == [
        [instructions, "Why is the billing export slow?"],
        ["Which port does PostgreSQL use?"],
    ]
    assert second[1] is first[0]
    model = embedding.embedder()
    for text, vector in zip(["Which port does PostgreSQL use?", instructions], second, strict=True):
        assert float(vector @ model.embed_query(text)) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError, match="read-only"):  # shared by prompts: never changed
        second[1][0] = 0.0


def test_a_repeated_segment_in_one_prompt_is_embedded_once(calls):
    vectors = hybrid.query_vectors(["Fix it.", "The deploy fails.", "Fix it."])
    assert calls == [["Fix it.", "The deploy fails."]]
    assert vectors[0] is vectors[2]


def test_another_model_never_gets_the_kept_vectors(calls, monkeypatch):
    hybrid.query_vectors(["The deploy fails on Fridays."])
    monkeypatch.setattr(embedding.embedder(), "identity", "another-model")
    hybrid.query_vectors(["The deploy fails on Fridays."])
    assert calls == [["The deploy fails on Fridays."], ["The deploy fails on Fridays."]]


def test_the_kept_vectors_are_bounded_least_recently_used_first(calls, monkeypatch):
    monkeypatch.setattr(hybrid, "QUERY_CACHE_SIZE", 2)
    hybrid.query_vectors(["one"])
    hybrid.query_vectors(["two"])
    hybrid.query_vectors(["one"])  # used again: "two" is now the oldest
    hybrid.query_vectors(["three"])
    hybrid.query_vectors(["one", "two"])
    assert calls == [["one"], ["two"], ["three"], ["two"]]
    assert len(hybrid._cache) == 2


def test_an_explicit_search_query_is_kept_too(calls):
    first = hybrid.query_vector("Which port does PostgreSQL use?")
    again = hybrid.query_vectors(["Which port does PostgreSQL use?"])
    assert again[0] is first
    assert calls == [["Which port does PostgreSQL use?"]]


def test_no_text_or_no_channel_gives_no_vectors(monkeypatch):
    assert hybrid.query_vectors([]) is None
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    assert hybrid.query_vectors(["The deploy fails."]) is None
    assert hybrid.query_vector("The deploy fails.") is None
