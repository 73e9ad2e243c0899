"""Scoring full-text candidates by weighted terms, the same on every engine. Pure.

The engines rank by their own relevance (FTS5's bm25, OceanBase's natural-language
MATCH), which weighs every term of the match by the engine's own statistics and cannot
take a weight per term. So the engine only proposes candidates (``policy.plan_search``),
and each candidate is scored here by BM25 over its analyzed text, with the weights the
policy gave each term: what decides the order is the same on SQLite and OceanBase.

A prompt is scored by its segments (``segmented``: sentences and lines): an entry
gets the score of the segment it matches best. A question wrapped in instructions is one
segment among many, and an entry that answers it is not outscored by one that shares a
word with each of the instructions. A one-sentence query is one segment: plain BM25.
"""

import heapq
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

from powercontext.search import analyzer
from powercontext.search.policy import STOP_TERMS

# BM25's usual constants (FTS5's too).
K1 = 1.2
B = 0.75

# With segments, a candidate's whole-query score is added at this share to its best
# segment's: evidence spread over two lines of a pasted log still counts.
WHOLE_QUERY_SHARE = 0.5

# A segment at least this share of whose terms recur in the user's recent prompts is
# boilerplate to the semantic channel (``semantic_segments``).
RECURRING_SEGMENT_SHARE = 0.5

# How many segments of a prompt the semantic channel embeds and searches, at most (one
# embedding call for all, one nearest-rows query each). Measured on both dev sets (docs/
# relevance-history.md §7): 8 keeps LoCoMo's wrapped questions apart from their template (6 joined
# them: 57.7 % against 65.9 % cold).
MAX_SEMANTIC_SEGMENTS = 8

# Sentence ends followed by space, and line breaks, end a segment.
_SEGMENT_BREAK = re.compile(r"(?<=[.!?;:])\s+|\n+")


def segmented(text: str) -> list[tuple[str, list[str]]]:
    """Each segment of ``text`` (sentences and lines), stripped, with its analyzer tokens
    in order, repeats kept; segments without a token are left out. A prompt's terms, its
    segments' terms and the segments it embeds are all read from this one pass (an 8 KB
    prompt was analysed three times)."""
    found = []
    for part in _SEGMENT_BREAK.split(text):
        if tokens := analyzer.tokens(part):
            found.append((part.strip(), tokens))
    return found


def semantic_segments(
    segments: Sequence[tuple[str, Sequence[str]]], recurring: Collection[str] = frozenset()
) -> list[str]:
    """The segments the semantic channel embeds, each on its own, of a prompt's
    ``segments`` (:func:`segmented`): a model embeds a whole text, so the question inside
    a prompt of instructions, logs or a diff is diluted by them, and an entry that answers
    it is found only by the segment that asks. Segments made mostly of the user's
    ``recurring`` terms (their boilerplate) are left out, so instructions pasted into every
    prompt do not pull their look-alikes in whatever the question; all segments when every
    one is boilerplate. At most ``MAX_SEMANTIC_SEGMENTS``: beyond, the two adjacent
    segments shortest together are joined, until few enough (a pasted log's lines join,
    the question stays whole). A one-sentence prompt is one segment."""
    kept = [
        part
        for part, tokens in segments
        if not _is_boilerplate(
            [term for term in dict.fromkeys(tokens) if term not in STOP_TERMS], recurring
        )
    ] or [part for part, _ in segments]
    return _join_shortest_neighbours(kept, MAX_SEMANTIC_SEGMENTS)


def _join_shortest_neighbours(segments: list[str], most: int) -> list[str]:
    """``segments`` with the two adjacent ones shortest together joined (by a space), the
    leftmost such pair first, again and again until at most ``most`` remain.

    A heap of the adjacent pairs keyed by (joined length, position), with pairs whose
    segments have since changed skipped when they come up: O(n log n) in the number of
    segments, where looking for the shortest pair among all of them after each join was
    quadratic (a prompt of 4,096 one-letter lines: 0.6 s). Lengths are counted, and each
    segment's text joined once at the end."""
    count = len(segments)
    if count <= most:
        return segments
    # A doubly linked list of runs of segments: run i starts at segment i and ends before
    # following[i]; a run absorbed into its left neighbour is dead.
    length = [len(segment) for segment in segments]
    following = list(range(1, count + 1))
    preceding = list(range(-1, count - 1))
    alive = [True] * count
    # A pair is (joined length, its left run, the left run's and the right run's lengths
    # when pushed): a run's length grows with each join, so an outdated pair is one whose
    # recorded lengths differ, and a run's start orders pairs as their positions do.
    pairs = [(length[i] + 1 + length[i + 1], i, length[i], length[i + 1]) for i in range(count - 1)]
    heapq.heapify(pairs)
    remaining = count
    while remaining > most:
        _, left, left_length, right_length = heapq.heappop(pairs)
        right = following[left]
        if (
            not alive[left]
            or right >= count
            or length[left] != left_length
            or length[right] != right_length
        ):
            continue
        length[left] += 1 + length[right]
        alive[right] = False
        following[left] = following[right]
        if following[left] < count:
            preceding[following[left]] = left
        remaining -= 1
        before, after = preceding[left], following[left]
        if before >= 0:
            heapq.heappush(
                pairs, (length[before] + 1 + length[left], before, length[before], length[left])
            )
        if after < count:
            heapq.heappush(
                pairs, (length[left] + 1 + length[after], left, length[left], length[after])
            )
    return [" ".join(segments[start : following[start]]) for start in range(count) if alive[start]]


def _is_boilerplate(terms: list[str], recurring: Collection[str]) -> bool:
    if not recurring:
        return False
    return not terms or sum(term in recurring for term in terms) >= RECURRING_SEGMENT_SHARE * len(
        terms
    )


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
