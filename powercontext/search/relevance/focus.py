"""Late interaction: how much of a prompt a candidate speaks to, token by token, and the
pass that leaves out a pack's candidates that speak to far less of it than the best.

A pooled embedding puts an entry on the prompt's subject as near as an entry that answers
it. Comparing their tokens tells them apart: a candidate's *focus* on a prompt segment is
the mean, over the segment's content tokens, of each token's best cosine to the
candidate's tokens (ColBERT's MaxSim, read as a recall: how much of the segment it
covers). :func:`off_focus` compares a candidate with the best on the segment it speaks to
most (docs/relevance.md, the relevance decision); :func:`leave_off_focus` is the pass a
Context Pack's search runs, with the token states ``powercontext.search.token_states``
keeps. ``matches`` and ``off_focus`` are pure.
"""

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from powercontext.search import fusion, token_states, vectors
from powercontext.search.indexes import SearchIndex
from powercontext.search.relevance import numbers
from powercontext.search.relevance.decision import Considered
from powercontext.search.relevance.rules import Verdict


def matches(segments: Sequence[Any], candidate: Any) -> list[Any]:
    """For each of a prompt's segments, given as their content rows (``token_states.rows_for``),
    the best cosine of each of its tokens to the ``candidate``'s content rows (zeros when
    the candidate has none). Their mean is the candidate's focus on the segment."""
    return matches_all(segments, [candidate])[0]


def matches_all(segments: Sequence[Any], candidates: Sequence[Any]) -> list[list[Any]]:
    """:func:`matches` for each of ``candidates``, by one product of every segment's rows
    with every candidate's: a long prompt's thousand rows against a window of sixteen
    candidates cost 9 ms as sixteen products, 5 ms as one (one BLAS thread). Rows may be
    kept as float16 (``token_states``): each side is widened to float32 once, after it is
    joined, not once per text."""
    if not segments:
        return [[] for _ in candidates]
    rows = _widened(np.concatenate(list(segments)))
    ends = np.cumsum([0, *(len(segment) for segment in segments)]).tolist()
    bounds = list(itertools.pairwise(ends))
    # Only candidates with rows take part in the product (a segment of no rows matches none).
    sized = [candidate for candidate in candidates if len(candidate)] if len(rows) else []
    best = iter(())
    if sized:
        starts = np.cumsum([0, *(len(candidate) for candidate in sized[:-1])])
        # Each candidate's columns reduced to their best, then one row per candidate.
        product = rows @ _widened(np.concatenate(sized)).T
        best = iter(np.maximum.reduceat(product, starts, axis=1).T)
    nothing = np.zeros(len(rows), dtype=np.float32)
    # Sliced, not np.split: the same views, without its overhead per candidate.
    return [
        [found[start:end] for start, end in bounds]
        for found in (
            next(best) if len(rows) and len(candidate) else nothing for candidate in candidates
        )
    ]


def _widened(rows: Any) -> Any:
    """``rows`` as float32 at least: products of float16 rows run without BLAS."""
    return rows.astype(np.promote_types(rows.dtype, np.float32), copy=False)


@dataclass(frozen=True)
class Focused:
    """``focus``: each judged candidate's focus (on the segment it speaks to most);
    ``left_out``: the candidates :func:`off_focus` leaves out; ``lift``: each judged
    candidate's focus less FOCUS_CROWD times the window's median focus on the same
    segment, on the segment where that is highest (``fusion.with_focus`` orders a pack's
    window by it). Copies of a note that repeats one of a long prompt's instructions word
    for word lift little (the median of their segment is their own focus); the answer to
    the question the instructions wrap lifts on the question."""

    focus: dict[str, float]
    left_out: frozenset[str]
    lift: dict[str, float] = field(default_factory=dict)


def off_focus(
    admitted: Sequence[tuple[str, bool]], matched: Mapping[str, Sequence[Any]]
) -> Focused:
    """The candidates of ``admitted`` (key, whether it is spared: it holds an anchor of the
    query or is among the semantic channel's FOCUS_NEAREST_KEPT nearest; best first) that
    speak to far less of the prompt than another does.

    ``matched`` gives, for the first FOCUS_WINDOW at least, each prompt segment's tokens'
    best cosines to the candidate (:func:`matches`); their mean is its focus on the
    segment. A candidate is left out when its best focus is more than FOCUS_SPREAD under
    the best of the window's on that same segment (an entry that repeats the prompt's
    instructions word for word sets no bar for the answer to its question), unless:
    - it is spared: it holds an anchor of the query (the prompt names what it holds), or
      it is the nearest in meaning (no evidence that it speaks to something else);
    - it says a word of that segment no better-ranked candidate says: a token it matches
      at FOCUS_WORD or more, FOCUS_WORD_MARGIN above every better-ranked candidate of the
      window ("Celery, logging and the webhook secret" is answered by three entries);
    - it has no focus (past the window)."""
    means = _focus_means_of(matched)
    focused = {key: max(values, default=0.0) for key, values in means.items()}
    window = [means[key] for key, _ in admitted[: numbers.FOCUS_WINDOW] if key in means]
    if not window:
        return Focused(focused, frozenset())
    best = [max(values) for values in zip(*window, strict=True)]
    # The standard library's median: the same float as NumPy's (the middle value, or the
    # mean of the two), 30 times faster on a window's eight values, and NumPy's imports
    # numpy.ma on its first call, which cost a server's first prepare about 20 ms.
    typical = [statistics.median(values) for values in zip(*window, strict=True)]
    lift = {
        key: max(
            (
                value - numbers.FOCUS_CROWD * usual
                for value, usual in zip(values, typical, strict=True)
            ),
            default=0.0,
        )
        for key, values in means.items()
    }
    left_out = set()
    better: list[str] = []
    for key, anchored in admitted:
        values = means.get(key)
        if values and not anchored:
            segment = values.index(focused[key])
            if focused[key] < best[segment] - numbers.FOCUS_SPREAD and not _says_more(
                matched[key][segment], [matched[other][segment] for other in better]
            ):
                left_out.add(key)
        if key in matched:
            better.append(key)
    return Focused(focused, frozenset(left_out), lift)


def _focus_means_of(matched: Mapping[str, Sequence[Any]]) -> dict[str, list[float]]:
    """Each candidate's focus on each segment (their segments alike): the mean of the
    segment's token matches, 0 for a segment without tokens. One mean per segment over a
    table of every candidate, not one per candidate and segment (a wrapped prompt's window:
    8 calls, not 128), and the same floats: a row of a contiguous table sums its slice in
    the order a one-dimensional mean does; a strided one would not."""
    keys = list(matched)
    lengths = [len(tokens) for tokens in matched[keys[0]]] if keys else []
    if not lengths:
        return {key: [] for key in keys}
    table = np.stack([np.concatenate(list(matched[key])) for key in keys])
    means = [[0.0] * len(lengths) for _ in keys]
    start = 0
    for segment, length in enumerate(lengths):
        if length:
            column = table[:, start : start + length].mean(axis=1)
            for row, value in zip(means, column.tolist(), strict=True):
                row[segment] = value
        start += length
    return dict(zip(keys, means, strict=True))


def _says_more(tokens: Any, better: Sequence[Any]) -> bool:
    """Whether a candidate matching a segment's tokens as ``tokens`` says one of them
    clearly, and clearly more than every candidate of ``better`` does."""
    said = np.asarray(tokens) >= numbers.FOCUS_WORD
    if better:
        said &= np.asarray(tokens) >= np.max(np.stack(better), axis=0) + numbers.FOCUS_WORD_MARGIN
    return bool(said.any())


def leave_off_focus(
    index: SearchIndex,
    considered: list[Considered],
    *,
    segment_texts: Sequence[str],
    scope_id: str,
) -> list[Considered]:
    """``considered`` with the admitted candidates that speak to far less of the prompt
    (its ``segment_texts``: the texts its vectors embed) than the best left out
    (:func:`off_focus`), each candidate of the window with
    its focus, and the window ordered with their focus (``_focus_order``). A Context
    Pack's: the next candidates take their places. Unchanged when the token states cannot
    be had (the channel switched off, no model)."""
    admitted = [item for item in considered if item.admitted]
    window = [item.ranked.hit.cited_id for item in admitted[: numbers.FOCUS_WINDOW]]
    if len(admitted) < 2 or not segment_texts:
        return considered
    documents = vectors.documents_of(index, scope_id=scope_id, cited_ids=window)
    keys = [key for key in window if key in documents]
    rows = token_states.rows_for([*segment_texts, *(documents[key] for key in keys)])
    if rows is None:
        return considered
    segments = rows[: len(segment_texts)]
    matched = dict(zip(keys, matches_all(segments, rows[len(segment_texts) :]), strict=True))
    spared = [
        (item.ranked.hit.cited_id, item.verdict is Verdict.ANCHORED or _nearest(item))
        for item in admitted
    ]
    judged = off_focus(spared, matched)
    return _focus_order(
        [
            replace(
                item,
                verdict=Verdict.OFF_FOCUS if key in judged.left_out else item.verdict,
                focus=judged.focus[key],
            )
            if (key := item.ranked.hit.cited_id) in judged.focus and item.admitted
            else item
            for item in considered
        ],
        judged.lift,
    )


def _nearest(item: Considered) -> bool:
    """Whether ``item`` is among the semantic channel's FOCUS_NEAREST_KEPT nearest."""
    rank = item.semantic_rank
    return rank is not None and rank <= numbers.FOCUS_NEAREST_KEPT


def _focus_order(considered: list[Considered], lift: dict[str, float]) -> list[Considered]:
    """``considered`` with the admitted candidates of the window in ``fusion.with_focus``
    order by their focus ``lift`` (:class:`Focused`), in the places they held: a
    Context Pack's first eight are those that speak most to the prompt among those it
    ranks first."""
    places = [
        at
        for at, item in enumerate(considered)
        if item.admitted and item.ranked.hit.cited_id in lift
    ]
    if len(places) < 2:
        return considered
    by_key = {considered[at].ranked.hit.cited_id: considered[at] for at in places}
    order = fusion.with_focus([(key, item.ranked.score, lift[key]) for key, item in by_key.items()])
    reordered = list(considered)
    for at, key in zip(places, order, strict=True):
        reordered[at] = by_key[key]
    return reordered
