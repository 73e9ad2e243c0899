"""The rules: a verdict for each candidate from its evidence and the query's facts. Pure.

The rules themselves are described in ``powercontext.search.relevance``'s docstring and in
docs/relevance.md, "The relevance decision"; their numbers are in ``numbers``.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from powercontext.search.relevance import anchors, numbers
from powercontext.search.relevance.evidence import Evidence, QueryFacts


class Verdict(StrEnum):
    """Why a candidate was admitted or left out (shown on the desk's pack preview)."""

    ANCHORED = "holds an anchor of the query"
    WORDS = "its words cover the segment it matches"
    MEANING = "near in meaning"
    WORDS_KEPT = "holds the query's words (a search keeps them all)"
    SUBJECT = "its words name a subject of the query no better candidate holds"
    NOT_ANCHORED = "lacks the anchor the query names"
    UNKNOWN_ANCHOR = "the query's names match nothing, and it is not near enough"
    UNREADABLE = "meaning alone, in a script the model cannot read"
    FAR = "meaning alone, not near enough"
    FAR_FROM_BEST = "meaning alone, far under the best candidate"
    WEAK_WORDS = "shares a word or two and little meaning"
    WORD_LIST = "holds the prompt's words all over it: a list of its words, not an answer"
    NOTHING_ANSWERS = "no candidate has strong evidence: the pack stays empty"
    DUPLICATE = "says what a better-ranked candidate says"
    OFF_FOCUS = "speaks to far less of the prompt, token by token, than the best candidate"


ADMITTED = frozenset(
    {Verdict.ANCHORED, Verdict.WORDS, Verdict.MEANING, Verdict.WORDS_KEPT, Verdict.SUBJECT}
)


@dataclass(frozen=True)
class Judgement:
    key: str
    verdict: Verdict

    @property
    def admitted(self) -> bool:
        return self.verdict in ADMITTED


def judge(candidates: Sequence[Evidence], facts: QueryFacts) -> list[Judgement]:
    """A verdict for each of ``candidates`` (in their order), given the query's
    ``facts``."""
    similarities = [c.similarity for c in candidates if c.similarity is not None]
    best = max(similarities, default=None)
    known = facts.known
    anchored = [c for c in candidates if c.anchor_terms_held & known]
    verdicts = [
        _verdict(
            candidate,
            facts,
            best=best,
            anchored=bool(anchored),
            unknown_only=bool(facts.unknown) and not anchored,
        )
        for candidate in candidates
    ]
    # A question about several things ("Celery, logging and the webhook secret") is
    # answered by several entries, each holding a share of its words: one whose words
    # name a subject no better candidate admitted holds counts, with some meaning behind.
    covered: set[str] = set()
    for at, (candidate, verdict) in enumerate(zip(candidates, verdicts, strict=True)):
        if verdict in ADMITTED:
            covered |= candidate.subjects
        elif (
            verdict is Verdict.WEAK_WORDS
            and candidate.subjects - covered
            and (candidate.similarity or 0.0) >= numbers.SUBJECT_SIMILARITY
            and facts.readable
            and candidate.readable
        ):
            verdicts[at] = Verdict.SUBJECT
            covered |= candidate.subjects
    judged = [Judgement(c.key, v) for c, v in zip(candidates, verdicts, strict=True)]
    if facts.pack and not any(
        _answers(c, v, facts) for c, v in zip(candidates, verdicts, strict=True)
    ):
        return [Judgement(j.key, Verdict.NOTHING_ANSWERS) if j.admitted else j for j in judged]
    return judged


def _verdict(
    candidate: Evidence,
    facts: QueryFacts,
    *,
    best: float | None,
    anchored: bool,
    unknown_only: bool,
) -> Verdict:
    """``best``: the best similarity of all candidates; ``anchored``: some candidate holds
    an anchor of the query; ``unknown_only``: the query's anchors are all unknown to the
    index and no candidate holds one."""
    similarity = candidate.similarity
    pack, readable_query = facts.pack, facts.readable
    if (
        pack
        and candidate.held >= numbers.WORD_LIST_HELD
        and candidate.spread >= numbers.WORD_LIST_SPREAD
    ):
        return Verdict.WORD_LIST
    names = candidate.anchor_terms_held & facts.known
    if names and not _far_behind_its_names(candidate, names, facts, best):
        return Verdict.ANCHORED
    if candidate.lexical and not pack:
        return Verdict.WORDS_KEPT
    strong = similarity is not None and similarity >= numbers.STRONG_SIMILARITY
    # In a one-sentence query that names something, a candidate its other words found is
    # evidence for another subject of the question; one found by meaning alone is only
    # the named thing's neighbour.
    neighbour = not candidate.lexical and facts.single_segment and not strong
    if anchored and (facts.anchors_only or neighbour):
        return Verdict.NOT_ANCHORED
    if unknown_only and (facts.anchors_only or not strong):
        return Verdict.UNKNOWN_ANCHOR
    if candidate.lexical:
        if similarity is None:
            return Verdict.WORDS  # no semantic evidence either way: the words decide
        if pack and not (readable_query and candidate.readable):
            # To an English model any two Chinese texts look alike: its cosine is no
            # evidence either way, and the words decide.
            if candidate.coverage >= numbers.UNREADABLE_COVERAGE:
                return Verdict.WORDS
            return Verdict.WEAK_WORDS
        if candidate.coverage >= numbers.WORD_COVERAGE and similarity >= numbers.WORDS_WITH_MEANING:
            return Verdict.WORDS
        if similarity >= numbers.MEANING_ALONE:
            return Verdict.MEANING
        return Verdict.WEAK_WORDS
    if not (readable_query and candidate.readable):
        return Verdict.UNREADABLE
    if similarity is None or similarity < numbers.SEMANTIC_FLOOR:
        return Verdict.FAR
    if best is not None and similarity < best - numbers.SEMANTIC_SPREAD:
        return Verdict.FAR_FROM_BEST
    return Verdict.MEANING


def _far_behind_its_names(
    candidate: Evidence, names: frozenset[str], facts: QueryFacts, best: float | None
) -> bool:
    """Whether ``candidate``, which holds the query's anchor terms ``names``, holds names
    only (no identifier), no other subject of the query, and is far in meaning from the
    best candidate: it speaks of what the query names ("Terraform" in a Terraform estate)
    or of another thing of the same name (the Dynamic Type note for a question on the
    Dynamic Island), not of what a one-sentence prompt asks, and is judged on its other
    evidence (a pack's only; see NAME_SPREAD)."""
    if not facts.pack or not facts.single_segment or facts.anchors_only:
        return False  # a search keeps its matches; a long prompt's best is boilerplate's
    if candidate.subjects - names or any(anchors.is_identifier_term(name) for name in names):
        return False  # another subject of the prompt; an identifier names one thing
    if not (facts.readable and candidate.readable):
        return False  # the cosine is no evidence in a script the model cannot read
    similarity = candidate.similarity
    if similarity is None or best is None:
        return False
    return similarity < best - numbers.NAME_SPREAD


def _answers(candidate: Evidence, verdict: Verdict, facts: QueryFacts) -> bool:
    """Whether ``candidate``, given ``verdict``, is strong evidence that the scope answers."""
    if verdict not in ADMITTED:
        return False
    similarity = candidate.similarity
    # A name that picks entries out shows that the scope answers when it is all the prompt
    # asks, or where the cosine can say nothing (no vector yet, a script the model cannot
    # read). Otherwise the entry holding it must also come as near as any other evidence
    # must: "How do I regenerate the Swift bindings for the iOS app?" found the notes
    # naming Fly.io (cosine 0.13) in a project with no iOS app.
    if (
        verdict is Verdict.ANCHORED
        and candidate.anchor_terms_held & facts.picking
        and (
            facts.anchors_only or similarity is None or not (facts.readable and candidate.readable)
        )
    ):
        return True
    if similarity is None:
        return candidate.lexical  # the channel had nothing to say: the words decide
    if not (facts.readable and candidate.readable):
        return candidate.lexical and candidate.coverage >= numbers.UNREADABLE_COVERAGE
    # Every word of a segment of two or more, with some meaning behind them: the model may
    # not read the words ("lorem ipsum"), but they are all there.
    whole = candidate.coverage >= 1.0 - 1e-9 and candidate.held >= 2
    return (
        similarity >= numbers.ANSWERED_SIMILARITY
        or (
            candidate.coverage >= numbers.ANSWERED_COVERAGE
            and similarity >= numbers.ANSWERED_COVERAGE_SIMILARITY
        )
        or (whole and similarity >= numbers.WORDS_WITH_MEANING)
    )
