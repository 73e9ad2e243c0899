"""``prepare_context``: the one place that turns a prompt into a Context Pack.

It resolves one Memory head, searches exactly that revision (and the approved
Experience heads) inside one read snapshot, and hands typed hits to the pure builder.
The query is a whole prompt: terms that recur in the scope's recent captured prompts are
the user's boilerplate and weigh less (``powercontext.search.policy``), and each entry is
scored by the prompt's segment it matches best (``powercontext.search.ranking``).
It writes nothing: no source, no memory, no cursor, no projection.

``explain_context`` is the same operation for a person at the desk (``contextpack.preview``): the
same pack, and why it holds what it holds (``contextpack.explanation``).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from contextpack.builder import (
    EXPERIENCE_WINDOW,
    MEMORY_WINDOW,
    BuildTrace,
    ExperienceHit,
    HeadMismatchError,
    MemoryCitation,
    MemoryHit,
    PreparedContext,
    PreparedContextBuilder,
)
from contextpack.explanation import (
    CandidateExplanation,
    FamilyExplanation,
    HitExplanation,
    PackExplanation,
    TermExplanation,
)
from contextpack.prompt_history import recent_prompt_terms
from experience.search_index import EXPERIENCE_INDEX
from experience.selectors import experience_search_at
from memory.search_index import MEMORY_INDEX
from memory.selectors import memory_head, memory_search_at
from memory.values import memory_ref
from powercontext import metrics
from powercontext.redaction import clean_prompt
from powercontext.refs import ArtifactRef
from powercontext.search import Considered, FamilyIndex, Query, SearchInconsistent
from powercontext.snapshot import read_snapshot

EMPTY = PreparedContext(status="empty", content=None, content_bytes=0)
_BUILDER = PreparedContextBuilder()
_INDEXES = (MEMORY_INDEX, EXPERIENCE_INDEX)

# How many hits past each window an explanation shows as "outside the window".
BEYOND_WINDOW_SHOWN = 8


@dataclass(frozen=True)
class _Retrieved:
    head: ArtifactRef
    memory_hits: list[MemoryHit]
    experience_hits: list[ExperienceHit]
    # The channels that found each hit, in the order of the hits (an explanation's).
    memory_channels: list[tuple[str, ...]]
    experience_channels: list[tuple[str, ...]]
    terms: list[str]
    recurring: frozenset[str]
    prompts: list[frozenset[str]]
    # Every candidate of each family with the relevance decision's verdict (Memory,
    # Experience); only an explanation keeps them.
    considered: tuple[list[Considered], list[Considered]] = ([], [])


def prepare_context(*, scope_id: str, query: str, max_bytes: int) -> PreparedContext:
    """The Context Pack for ``query`` in ``scope_id``.

    The query is searched without its ``<private>`` spans and secrets
    (``powercontext.redaction.clean_prompt``): nothing is stored, and neither is ever a
    search term. Empty (one generic answer) when there is nothing relevant or nothing
    fits.
    Raises ``powercontext.search.SearchInconsistent`` if a hit cites a revision other
    than the one searched; no partial pack is ever returned.

    Each call is counted in the privacy-safe metrics (``powercontext.metrics``): its
    outcome, content bytes and the builder's aggregate counters, nothing else.
    """
    search_mode = "hybrid" if Query.can_embed() else "fts"
    query = clean_prompt(query)
    try:
        prepared = _prepare(scope_id=scope_id, query=query, max_bytes=max_bytes)
    except Exception:
        metrics.observe_prepare_failed(search_mode)
        raise
    metrics.observe_prepared(
        status=prepared.status,
        content_bytes=prepared.content_bytes,
        candidates_seen=prepared.candidates_seen,
        items_included=prepared.items_included,
        items_truncated=prepared.items_truncated,
        items_skipped_for_budget=prepared.items_skipped_for_budget,
        search_mode=search_mode,
    )
    return prepared


def explain_context(
    *, scope_id: str, query: str, max_bytes: int
) -> tuple[PreparedContext, PackExplanation]:
    """The pack :func:`prepare_context` returns for the same input and state, and why it
    holds what it holds (``contextpack.explanation``). For the desk's preview: it writes
    nothing and is not counted in the metrics, which describe what agents were sent.
    """
    query = clean_prompt(query)
    with read_snapshot():
        found = _retrieve(
            scope_id=scope_id, query=query, beyond_window=BEYOND_WINDOW_SHOWN, explain=True
        )
        families = (
            _family_terms(found, scope_id, "memory", MEMORY_WINDOW, MEMORY_INDEX),
            _family_terms(found, scope_id, "experience", EXPERIENCE_WINDOW, EXPERIENCE_INDEX),
        )
    if not found.memory_hits and not found.experience_hits:
        prepared, trace = EMPTY, BuildTrace(max_bytes=max_bytes, decisions=())
    else:
        with _one_inconsistency():
            prepared, trace = _BUILDER.build_explained(
                head=found.head,
                memory_hits=found.memory_hits,
                experience_hits=found.experience_hits,
                max_bytes=max_bytes,
            )
    return prepared, _explanation(found, families, trace)


@contextmanager
def _one_inconsistency() -> Iterator[None]:
    """The pure builder's refusal of a hit from another revision is, here, the kernel's
    one "the index disagrees with the head" error, as the selectors raise it."""
    try:
        yield
    except HeadMismatchError as error:
        raise SearchInconsistent() from error


def _prepare(*, scope_id: str, query: str, max_bytes: int) -> PreparedContext:
    with read_snapshot():
        # A project with nothing stored yet (an agent's first days on it) answers at
        # once: no prompt history read, no segment embedded, for the same empty pack.
        if not any(index.holds_rows(scope_id=scope_id) for index in _INDEXES):
            return EMPTY
        found = _retrieve(scope_id=scope_id, query=query, beyond_window=0)
    if not found.memory_hits and not found.experience_hits:
        return EMPTY
    with _one_inconsistency():
        return _BUILDER.build(
            head=found.head,
            memory_hits=found.memory_hits,
            experience_hits=found.experience_hits,
            max_bytes=max_bytes,
        )


def _retrieve(
    *, scope_id: str, query: str, beyond_window: int, explain: bool = False
) -> _Retrieved:
    """The hits the builder is given, best first; run inside one read snapshot. The
    builder ignores hits past its windows, so ``beyond_window`` more of them change
    nothing in the pack (only an explanation asks for them, with ``explain``: then every
    candidate's verdict is kept too)."""
    head = memory_head(scope_id=scope_id)
    prompts = recent_prompt_terms(scope_id=scope_id, query=query)
    # Each segment embedded on its own, in one call, once the user's boilerplate is known
    # (a read snapshot holds no lock: WAL readers and REPEATABLE READ never block a
    # writer). No vector when the channel cannot embed: the pack is then the lexical one.
    prompt = Query.prompt(query, history=prompts)
    memory_limit = MEMORY_WINDOW + beyond_window
    experience_limit = EXPERIENCE_WINDOW + beyond_window
    # An explanation keeps every candidate's verdict, from the same searches.
    considered: tuple[list[Considered], list[Considered]] = ([], [])
    found = memory_search_at(
        scope_id=scope_id,
        head=head,
        query=prompt,
        limit=memory_limit,
        verdicts=considered[0] if explain else None,
    )
    experiences = experience_search_at(
        scope_id=scope_id,
        query=prompt,
        limit=experience_limit,
        verdicts=considered[1] if explain else None,
    )
    memory_hits = [
        MemoryHit(
            citation=MemoryCitation(
                memory_ref=memory_ref(hit.revision),
                entry_id=hit.entry_id,
                entry_version_id=hit.entry_version_id,
            ),
            text=hit.text,
        )
        for hit in found
    ]
    experience_hits = [
        ExperienceHit(hit.artifact_ref, hit.situation, hit.action, hit.outcome, hit.lesson)
        for hit in experiences
    ]
    return _Retrieved(
        head=memory_ref(head),
        memory_hits=memory_hits,
        experience_hits=experience_hits,
        memory_channels=[hit.channels for hit in found],
        experience_channels=[hit.matched_by for hit in experiences],
        terms=prompt.terms,
        recurring=prompt.recurring,
        prompts=prompts,
        considered=considered,
    )


def _family_terms(
    found: _Retrieved, scope_id: str, family: str, window: int, index: FamilyIndex
) -> FamilyExplanation:
    """Each query term's fate in one family's search, from the counts that search used
    (the index's, in the caller's read snapshot, so the same counts)."""
    documents, fates = index.term_fates(found.terms, found.recurring, scope_id=scope_id)
    return FamilyExplanation(
        family=family,
        documents=documents,
        window=window,
        terms=tuple(
            TermExplanation(
                term=term,
                decision=decision,
                documents=holding,
                recent_prompts=sum(term in prompt for prompt in found.prompts),
            )
            for term, decision, holding in fates
        ),
    )


def _verdict_reason(item: Considered) -> str:
    """The relevance decision's verdict on a candidate, as the preview shows it: a
    near-duplicate names the candidate that stands for it; a candidate of a pack's window
    shows its focus (how much of the prompt it speaks to, token by token)."""
    if item.duplicate_of is not None:
        return f"{item.verdict.value}: {item.duplicate_of}"
    if item.focus is not None:
        return f"{item.verdict.value} (focus {item.focus:.2f})"
    return item.verdict.value


def _explanation(
    found: _Retrieved, families: tuple[FamilyExplanation, FamilyExplanation], trace: BuildTrace
) -> PackExplanation:
    sources: dict[tuple[str, int], tuple[dict[str, Any], str]] = {}
    channels = {
        **{("memory", rank): names for rank, names in enumerate(found.memory_channels, start=1)},
        **{
            ("experience", rank): names
            for rank, names in enumerate(found.experience_channels, start=1)
        },
    }
    for rank, hit in enumerate(found.memory_hits, start=1):
        citation = {
            "memory_ref": hit.citation.memory_ref.as_payload(),
            "entry_id": hit.citation.entry_id,
            "entry_version_id": hit.citation.entry_version_id,
        }
        sources["memory", rank] = (citation, hit.text)
    for rank, exp in enumerate(found.experience_hits, start=1):
        sources["experience", rank] = ({"artifact_ref": exp.artifact_ref.as_payload()}, exp.lesson)
    hits = []
    for decision in trace.decisions:
        citation, text = sources[decision.family, decision.rank]
        hits.append(
            HitExplanation(
                family=decision.family,
                rank=decision.rank,
                matched_by=channels[decision.family, decision.rank],
                citation=citation,
                text=text,
                decision=decision,
            )
        )
    candidates = tuple(
        CandidateExplanation(
            family=family,
            cited_id=item.ranked.hit.cited_id,
            matched_by=item.ranked.channels,
            semantic_rank=item.semantic_rank,
            similarity=item.similarity,
            admitted=item.admitted,
            reason=_verdict_reason(item),
        )
        for family, considered in zip(("memory", "experience"), found.considered, strict=True)
        for item in considered
    )
    return PackExplanation(
        max_bytes=trace.max_bytes,
        recent_prompts=len(found.prompts),
        memory=families[0],
        experience=families[1],
        hits=tuple(hits),
        candidates=candidates,
    )
