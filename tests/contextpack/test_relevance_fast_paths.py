"""The relevance decision's per-candidate and per-word shortcuts give what the plain
definitions give, on seeded random input: the ASCII checks done in C (``readable``,
``_is_anchor``, ``_is_identifier``), coverage's weights taken once per query (and only the
segments a candidate touches summed), the focus lift's median taken by the standard
library, the window's focus means taken a segment at a time, and the near-duplicates'
numbered terms."""

import random
import unicodedata

import numpy as np

from powercontext.search.relevance import anchors, evidence, focus, near_duplicates, numbers

ALPHABET = "aZ9_.-x" + "éß中Ж" + "AbC0 "


def _words(rng, count):
    return ["".join(rng.choices(ALPHABET, k=rng.randint(0, 7))) for _ in range(count)]


def _plain_readable(text):
    letters = [char for char in text if char.isalpha()]
    if not letters:
        return True
    latin = sum(
        1 for char in letters if char.isascii() or unicodedata.name(char, "").startswith("LATIN")
    )
    return latin >= numbers.READABLE_SHARE * len(letters)


def _plain_identifier(word):
    return word.isascii() and any(c.isalpha() for c in word) and any(c.isdigit() for c in word)


def _plain_anchor(word, sentence_start):
    if len(word) < 2 or not word.isascii() or not any(char.isalpha() for char in word):
        return False
    if word.lower() in anchors.CALENDAR_WORDS:
        return False
    if _plain_identifier(word) or "_" in word:
        return True
    if word.isupper():
        return False
    if any(char.isupper() for char in word[1:]):
        return True
    return word[0].isupper() and not sentence_start


def _plain_coverage(terms, weights, segments):
    best = 0.0
    for segment in segments:
        total = held = 0.0
        for term in dict.fromkeys(segment):  # in the segment's order, as evidence sums
            weight = weights.get(term)
            if weight is None:
                continue
            total += weight
            if term in terms:
                held += weight
        if total > 0:
            best = max(best, held / total)
    return best


def test_word_checks_match_their_plain_definitions():
    rng = random.Random(41)
    words = [*_words(rng, 20000), "Friday", "GraphQL", "HAR-1101", "v3", "ÉCOLE", "a1"]
    for word in words:
        assert anchors._is_identifier(word) == _plain_identifier(word), word
        for start in (False, True):
            assert anchors._is_anchor(word, start) == _plain_anchor(word, start), word
    for _ in range(2000):
        text = " ".join(_words(rng, rng.randint(0, 6)))
        assert anchors.readable(text) == _plain_readable(text), text


def test_coverage_prepared_once_is_the_same_float():
    rng = random.Random(41)
    vocabulary = [f"t{at}" for at in range(30)]
    for _ in range(500):
        weights = {term: rng.random() * 3 for term in rng.sample(vocabulary, 12)}
        # Words repeated within a segment count once, as the plain definition counts them.
        segments = [rng.choices(vocabulary, k=rng.randint(0, 8)) for _ in range(rng.randint(0, 12))]
        prepared = evidence.weighted(weights, segments)
        for _ in range(5):
            terms = frozenset(rng.sample(vocabulary, rng.randint(0, 15)))
            expected = _plain_coverage(terms, weights, segments)
            assert evidence.coverage_of(terms, prepared) == expected
            assert evidence.coverage(terms, weights, segments) == expected


def _plain_focus_means(segments):
    """A candidate's focus on each segment, one NumPy mean each."""
    return [float(tokens.mean()) if len(tokens) else 0.0 for tokens in segments]


def _plain_lift(means):
    """The focus lift as NumPy's median defines it."""
    typical = [float(np.median(values)) for values in zip(*means.values(), strict=True)]
    return {
        key: max(
            (v - numbers.FOCUS_CROWD * u for v, u in zip(values, typical, strict=True)),
            default=0.0,
        )
        for key, values in means.items()
    }


def test_the_focus_lift_is_numpys_median_to_the_bit():
    rng = random.Random(41)
    for _ in range(500):
        segments = rng.randint(1, 5)
        tokens = [rng.randint(0, 6) for _ in range(segments)]
        keys = [f"k{at}" for at in range(rng.randint(1, numbers.FOCUS_WINDOW))]
        matched = {
            key: [
                np.array([rng.choice([rng.random(), 0.5, 0.0]) for _ in range(count)])
                for count in tokens
            ]
            for key in keys
        }
        judged = focus.off_focus([(key, False) for key in keys], matched)
        means = {key: _plain_focus_means(matched[key]) for key in keys}
        assert judged.lift == _plain_lift(means)


def test_the_windows_focus_means_are_each_candidates_means_to_the_bit():
    # As leave_off_focus gets them: matches_all's rows are strided views of one product.
    rng = np.random.default_rng(41)
    for _ in range(300):
        lengths = [int(n) for n in rng.integers(0, 90, size=rng.integers(1, 9))]
        segments = [rng.standard_normal((n, 8)).astype(np.float16) for n in lengths]
        candidates = [
            rng.standard_normal((int(rng.integers(0, 40)), 8)).astype(np.float16)
            for _ in range(int(rng.integers(1, 17)))
        ]
        matched = dict(enumerate(focus.matches_all(segments, candidates)))
        assert focus._focus_means_of(matched) == {
            key: _plain_focus_means(found) for key, found in matched.items()
        }
    assert focus._focus_means_of({}) == {}
    assert focus._focus_means_of({"a": [], "b": []}) == {"a": [], "b": []}


def test_numbered_terms_are_the_terms_holding_a_digit():
    rng = random.Random(41)
    alphabet = "ab9_-x" + "é中²٣" + "Ⅻ"
    for _ in range(2000):
        text = " ".join("".join(rng.choices(alphabet, k=rng.randint(1, 5))) for _ in range(6))
        expected = frozenset(t for t in text.split() if any(c.isdigit() for c in t))
        assert near_duplicates.numbered_terms(text) == expected, text


def test_readability_kept_by_digest_stays_bounded_and_right(monkeypatch):
    monkeypatch.setattr(anchors, "READABLE_KEPT", 8)
    monkeypatch.setattr(anchors, "_readable_texts", {})
    rng = random.Random(41)
    for _ in range(200):
        text = " ".join(_words(rng, rng.randint(1, 6))) + " 中"
        assert anchors.readable(text) == _plain_readable(text), text
        assert anchors.readable(text) == _plain_readable(text), text  # kept, the same
        assert len(anchors._readable_texts) <= 8
