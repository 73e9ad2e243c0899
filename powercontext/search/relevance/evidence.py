"""The evidence the rules read: one value of facts about the query (``QueryFacts``) and
one about each candidate (``Evidence``), gathered from both channels' candidates and the
search's plan (``gather``). Pure.
"""

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from powercontext.search.policy import STOP_TERMS, SearchPlan
from powercontext.search.relevance import anchors, numbers


@dataclass(frozen=True)
class QueryFacts:
    """What the rules know of the query, once for all its candidates (``query_facts``).

    ``names``: the query's anchor names (``anchors.anchor_names``), each as the terms an
    entry must hold together; a query of one word names that word. ``picking``: its
    anchor terms some entry of the index holds and that single entries out
    (``anchors.picks_out``); ``common``: those it holds that most of the index's entries
    hold (admitted as anchors, not evidence that something answers); ``unknown``: those no
    entry holds. ``anchors_only``: the query says nothing but anchors. ``single_segment``:
    it is one sentence (in a long prompt an anchor names one of its subjects, not the
    only one). ``readable``: the model can read it (``anchors.readable``). ``subjects``:
    its stronger words (weighed at least as much as its weighted words on average).
    ``pack``: a Context Pack's decision (words alone judged too, and empty unless
    something answers); otherwise an explicit search's (every candidate its words found
    is kept)."""

    names: frozenset[frozenset[str]] = frozenset()
    picking: frozenset[str] = frozenset()
    common: frozenset[str] = frozenset()
    unknown: frozenset[str] = frozenset()
    anchors_only: bool = False
    single_segment: bool = True
    readable: bool = True
    subjects: frozenset[str] = frozenset()
    pack: bool = False

    @property
    def known(self) -> frozenset[str]:
        """The query's anchor terms some entry holds: an entry holding one is anchored."""
        return self.picking | self.common


class Asked(Protocol):
    """What the decision reads of a query (``powercontext.search.query.Query``)."""

    @property
    def text(self) -> str: ...
    @property
    def terms(self) -> list[str]: ...
    @property
    def segments(self) -> list[list[str]] | None: ...
    @property
    def anchors(self) -> frozenset[str]: ...
    @property
    def anchor_names(self) -> frozenset[frozenset[str]]: ...
    @property
    def pack(self) -> bool: ...


def segments_of(query: Asked) -> list[list[str]]:
    """The query's segments, or its terms as one when it is scored whole."""
    return query.segments or [query.terms]


def query_facts(query: Asked, plan: SearchPlan) -> QueryFacts:
    """The facts of ``query`` against the index its search's ``plan`` was made for (its
    weights and counts)."""
    weights = plan.weights
    content = [term for term in query.terms if term not in STOP_TERMS]
    # A query of one word ("deployment", a tag) names one thing, as an identifier does; a
    # sentence around its one content word ("what did you just run?") does not.
    one_word = len(content) == 1 and len(query.terms) <= numbers.ONE_WORD_QUERY_TERMS
    names = query.anchor_names | {frozenset(content)} if one_word else query.anchor_names
    held = query.anchors | frozenset(content) if one_word else query.anchors
    anchors_only = bool(content) and all(term in held for term in content)
    known = frozenset(term for term in held if term in weights)
    # A name most of the scope's entries hold (the speaker of half a chat, the language
    # the project is written in) picks none of them out: the entries holding it are
    # anchored, but do not show that the scope answers. Asked alone, it is what the
    # query names.
    picking = frozenset(
        term
        for term in known
        if anchors_only
        or anchors.picks_out(term, plan.document_frequency.get(term, 0), plan.documents)
    )
    mean_weight = sum(weights.values()) / len(weights) if weights else 0.0
    return QueryFacts(
        names=names,
        picking=picking,
        common=known - picking,
        unknown=held - known,
        anchors_only=anchors_only,
        single_segment=len(segments_of(query)) <= 1,
        readable=anchors.readable(query.text),
        subjects=frozenset(term for term, weight in weights.items() if weight >= mean_weight),
        pack=query.pack,
    )


@dataclass(frozen=True)
class Evidence:
    """What is known about one candidate: ``similarity`` is its cosine to the query (to the
    nearest of a prompt's segments; None when the semantic channel has nothing on it),
    ``coverage`` the weighted share of the best-matching segment's words it holds (0 when
    its words did not find it), ``terms`` its analyzed text's terms. ``coverage``,
    ``subjects``, ``held`` and ``spread`` are a pack's: an explicit search's verdicts do
    not read them, and :func:`gather` leaves them at nothing there."""

    key: str
    lexical: bool
    similarity: float | None
    coverage: float
    terms: frozenset[str]
    readable: bool
    # The query's stronger words it holds (weighed at least as much as the query's
    # weighted words on average): the subjects it speaks to.
    subjects: frozenset[str] = frozenset()
    # How many of the query's weighted words it holds.
    held: int = 0
    # The share of the query's segments it holds a weighted word of (``spread``).
    spread: float = 0.0
    # The query's anchor terms it holds as whole names (``held``); None: each of its
    # ``terms`` counts.
    anchors_held: frozenset[str] | None = None

    @property
    def anchor_terms_held(self) -> frozenset[str]:
        """The terms that say which of the query's anchors it holds."""
        return self.terms if self.anchors_held is None else self.anchors_held


def coverage(
    terms: Collection[str],
    weights: Mapping[str, float],
    segments: Sequence[Collection[str]],
) -> float:
    """The weighted share of the best segment's searchable words that ``terms`` holds."""
    return coverage_of(terms, weighted(weights, segments))


@dataclass(frozen=True)
class Weighted:
    """A query's segments as :func:`coverage_of` reads them (:func:`weighted`):
    ``segments``, each segment's searchable words with their weights, and their total;
    ``places``, where each word is (its segment, its place in the segment's words)."""

    segments: list[tuple[list[tuple[str, float]], float]]
    places: dict[str, list[tuple[int, int]]]


def weighted(weights: Mapping[str, float], segments: Sequence[Collection[str]]) -> Weighted:
    """Each segment's searchable words with their weights, and their total: the part of
    :func:`coverage` that does not depend on the candidate, done once per query."""
    found = []
    places: dict[str, list[tuple[int, int]]] = {}
    for at, segment in enumerate(segments):
        # In the segment's order, not a set's: a set's order follows the process's hash
        # seed, and so would the sums' last bits and any verdict on a threshold's edge.
        pairs = [
            (term, weight)
            for term in dict.fromkeys(segment)
            if (weight := weights.get(term)) is not None
        ]
        total = 0.0
        for place, (term, weight) in enumerate(pairs):
            total += weight  # in the order coverage always summed: the same float
            places.setdefault(term, []).append((at, place))
        found.append((pairs, total))
    return Weighted(found, places)


def coverage_of(terms: Collection[str], prepared: Weighted) -> float:
    """:func:`coverage` over the segments :func:`weighted` prepared. Only the segments
    holding one of ``terms`` are summed (a wrapped prompt has dozens, a candidate touches
    a few), each in its words' order: the same float as summing every segment."""
    touched = sorted(
        place for term in prepared.places.keys() & terms for place in prepared.places[term]
    )
    best = 0.0
    at = 0
    while at < len(touched):
        segment = touched[at][0]
        pairs, total = prepared.segments[segment]
        held = 0.0
        while at < len(touched) and touched[at][0] == segment:
            held += pairs[touched[at][1]][1]
            at += 1
        if total > 0:
            best = max(best, held / total)
    return best


def spread(
    terms: Collection[str],
    weights: Mapping[str, float],
    segments: Sequence[Collection[str]],
) -> float:
    """The share of the segments with a searchable word that hold one of ``terms``; 0
    when fewer than WORD_LIST_SEGMENTS segments have a searchable word."""
    searchable = [segment for segment in segments if any(term in weights for term in segment)]
    if len(searchable) < numbers.WORD_LIST_SEGMENTS:
        return 0.0
    touched = sum(
        1 for segment in searchable if any(term in weights and term in terms for term in segment)
    )
    return touched / len(searchable)


def gather(
    candidates: Sequence[tuple[str, str, bool, float | None]],
    *,
    facts: QueryFacts,
    weights: Mapping[str, float],
    segments: Sequence[Collection[str]],
) -> list[Evidence]:
    """The evidence for each of ``candidates`` (key, analyzed text, whether its words
    found it, its similarity), in their order; ``weights`` and ``segments`` are the
    query's (the plan's weights, its segments or its terms as one)."""
    # A search's verdicts read its anchors, readability and similarity alone (``rules``):
    # coverage, subjects, held words and spread are a pack's, left at nothing there.
    prepared = weighted(weights, segments) if facts.pack else None
    found = []
    for key, text, lexical, similarity in candidates:
        terms = frozenset(text.split())
        covered, subjects, held, spread_share = 0.0, frozenset[str](), 0, 0.0
        if prepared is not None:
            covered, subjects = coverage_of(terms, prepared), terms & facts.subjects
            held = len(weights.keys() & terms)
            # Only the word-list rule reads it, and only past WORD_LIST_HELD words.
            if held >= numbers.WORD_LIST_HELD:
                spread_share = spread(terms, weights, segments)
        found.append(
            Evidence(
                key=key,
                lexical=lexical,
                similarity=similarity,
                coverage=covered,
                terms=terms,
                anchors_held=anchors.held(facts.names, terms),
                readable=anchors.readable(text),
                subjects=subjects,
                held=held,
                spread=spread_share,
            )
        )
    return found
