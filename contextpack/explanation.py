"""Why a Context Pack holds what it holds: a pure description of one ``prepare``.

``contextpack.application.explain_context`` fills it from the same retrieval and the same
builder the public operation uses; the desk's pack preview (``contextpack.preview``)
shows it. It is for people, never part of the v1 response.

Every hit records the retrieval channels that found it (``matched_by``: ``fts``, its
words; ``vector``, its meaning; both when both did), and ``rank`` is its place in the
fused order the builder consumes.
"""

from dataclasses import dataclass
from typing import Any

from contextpack.builder import HitDecision


@dataclass(frozen=True)
class TermExplanation:
    """One query term as one family's search saw it: ``decision`` is one of
    ``powercontext.search.policy``'s term decisions; ``documents`` how many of the family's
    indexed documents hold it (None when it was never counted: a stop word or recurring
    term is not looked up); ``recent_prompts`` how many of the recent prompts hold it."""

    term: str
    decision: str
    documents: int | None
    recent_prompts: int


@dataclass(frozen=True)
class FamilyExplanation:
    family: str  # "memory" or "experience"
    documents: int  # indexed documents of the scope in this family
    window: int  # how many hits the builder considers
    terms: tuple[TermExplanation, ...]


@dataclass(frozen=True)
class HitExplanation:
    family: str
    rank: int  # the hit's place in its family's search order, as the builder saw it
    matched_by: tuple[str, ...]  # "fts", "vector" or both
    citation: dict[str, Any]
    text: str  # the source the builder renders (before any truncation)
    decision: HitDecision


@dataclass(frozen=True)
class CandidateExplanation:
    """One candidate a family's search considered, and the relevance decision on it
    (``powercontext.search.relevance``): admitted candidates become the hits the builder
    sees, the others never reach it. ``semantic_rank`` is its place among the semantic
    channel's candidates (1 = nearest; None: that channel did not propose it) and
    ``similarity`` its cosine to the prompt (to the nearest of its segments)."""

    family: str
    cited_id: str
    matched_by: tuple[str, ...]
    semantic_rank: int | None
    similarity: float | None
    admitted: bool
    reason: str


@dataclass(frozen=True)
class PackExplanation:
    max_bytes: int
    recent_prompts: int  # captured prompts looked back on for recurring terms
    memory: FamilyExplanation
    experience: FamilyExplanation
    hits: tuple[HitExplanation, ...]  # Memory first, each family in rank order
    # Every candidate of the searches, Memory first, each family in fused order.
    candidates: tuple[CandidateExplanation, ...] = ()
