"""Scoring full-text candidates by weighted terms, the same on every engine. Pure.

The engines rank by their own relevance (FTS5's bm25, OceanBase's natural-language
MATCH), which weighs every term of the match by the engine's own statistics and cannot
take a weight per term. So the engine only proposes candidates (``policy.plan_search``),
and each candidate is scored here by BM25 over its analyzed text, with the weights the
policy gave each term: what decides the order is the same on SQLite and OceanBase.

A prompt is scored by its segments (``query_segments``: sentences and lines): an entry
gets the score of the segment it matches best. A question wrapped in instructions is one
segment among many, and an entry that answers it is not outscored by one that shares a
word with each of the instructions. A one-sentence query is one segment: plain BM25.
"""

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

from powercontext import analyzer
from powercontext.search.policy import STOP_TERMS

# BM25's usual constants (FTS5's too).
K1 = 1.2
B = 0.75

# With segments, a candidate's whole-query score is added at this share to its best
# segment's: evidence spread over two lines of a pasted log still counts.
WHOLE_QUERY_SHARE = 0.5

# A segment at least this share of whose terms recur in the user's recent prompts is
# boilerplate to the semantic channel (``semantic_text``).
RECURRING_SEGMENT_SHARE = 0.5

# Sentence ends followed by space, and line breaks, end a segment.
_SEGMENT_BREAK = re.compile(r"(?<=[.!?;:])\s+|\n+")


def semantic_text(text: str, recurring: Collection[str]) -> str:
    """``text`` without its segments made mostly of the user's ``recurring`` terms (their
    boilerplate), for the semantic channel: a model embeds a whole text, so instructions
    pasted into every prompt would pull their look-alikes in whatever the question. The
    whole text when nothing recurs, or when every segment is boilerplate."""
    if not recurring:
        return text
    kept = []
    for part in _SEGMENT_BREAK.split(text):
        terms = [term for term in analyzer.query_terms(part) if term not in STOP_TERMS]
        if terms and sum(term in recurring for term in terms) < RECURRING_SEGMENT_SHARE * len(
            terms
        ):
            kept.append(part)
    return " ".join(kept) if kept else text


def query_segments(text: str) -> list[list[str]]:
    """The analyzer terms of each segment of ``text`` (sentences and lines), in order;
    segments without terms are left out."""
    segments = (analyzer.query_terms(part) for part in _SEGMENT_BREAK.split(text))
    return [terms for terms in segments if terms]


def rank(
    candidates: Iterable[tuple[str, str]],
    weights: Mapping[str, float],
    segments: Sequence[Collection[str]] | None = None,
) -> list[tuple[str, float]]:
    """``(key, score)`` for ``candidates`` (``(key, searchable_text)``), best first, ties
    by key. A candidate scores the best of ``segments`` (each a collection of terms; None:
    the whole query, every term of ``weights``); each segment sums, over its weighted terms
    the candidate holds, weight times BM25's term-frequency part. Lengths are normalised
    by the candidates' mean length."""
    documents = []
    for key, text in candidates:
        tokens = text.split()
        documents.append((key, len(tokens), Counter(t for t in tokens if t in weights)))
    if not documents:
        return []
    mean_length = sum(length for _, length, _ in documents) / len(documents)
    # Which segments hold each term, so a candidate's few matching terms are added only to
    # their segments' scores (prompts have dozens of segments, entries match a few terms).
    holding: dict[str, list[int]] = {}
    for index, segment in enumerate(segments or ()):
        for term in set(segment):
            if term in weights:
                holding.setdefault(term, []).append(index)
    scored = []
    for key, length, frequencies in documents:
        norm = K1 * (1.0 - B + B * length / mean_length) if mean_length else K1
        whole = 0.0
        by_segment: dict[int, float] = {}
        for term, frequency in frequencies.items():
            part = weights[term] * frequency * (K1 + 1.0) / (frequency + norm)
            whole += part
            for index in holding.get(term, ()):
                by_segment[index] = by_segment.get(index, 0.0) + part
        if holding:
            best = max(by_segment.values(), default=0.0)
            scored.append((key, best + WHOLE_QUERY_SHARE * whole))
        else:
            scored.append((key, whole))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored
