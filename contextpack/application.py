"""ScopedContextApplication: the one place that turns a prompt into a Context Pack.

It resolves one Memory head, searches exactly that revision (and the approved
Experience heads) inside one read snapshot, and hands typed hits to the pure builder.
The query is a whole prompt: terms that recur in the scope's recent captured prompts are
the user's boilerplate and are not searched (``powercontext.search.policy``).
It writes nothing: no source, no memory, no cursor, no projection.
"""

from typing import Any

from contextpack.builder import (
    EXPERIENCE_WINDOW,
    MEMORY_WINDOW,
    ArtifactRef,
    MemoryCitation,
    MemoryHit,
    PreparedContext,
    PreparedContextBuilder,
)
from experience.selectors import experience_search_at
from memory.selectors import memory_head, memory_search_at
from memory.values import MEMORY_ARTIFACT_ID, MEMORY_FAMILY
from powercontext import analyzer, metrics
from powercontext.prompt_history import recent_prompt_terms
from powercontext.search.policy import recurring_terms
from powercontext.snapshot import read_snapshot

EMPTY = PreparedContext(status="empty", content=None, content_bytes=0)


class ScopedContextApplication:
    def __init__(self, builder: PreparedContextBuilder | None = None):
        self.builder = builder or PreparedContextBuilder()

    def prepare(self, *, scope_id: str, query: str, max_bytes: int) -> PreparedContext:
        """The Context Pack for ``query`` in ``scope_id``.

        Empty (one generic answer) when there is nothing relevant or nothing fits.
        Raises ``contextpack.builder.HeadMismatchError`` if a hit cites a revision other
        than the one searched; no partial pack is ever returned.

        Each call is counted in the privacy-safe metrics (``powercontext.metrics``): its
        outcome, content bytes and the builder's aggregate counters, nothing else.
        """
        try:
            prepared = self._prepare(scope_id=scope_id, query=query, max_bytes=max_bytes)
        except Exception:
            metrics.observe_prepare_failed()
            raise
        metrics.observe_prepared(
            status=prepared.status,
            content_bytes=prepared.content_bytes,
            candidates_seen=prepared.candidates_seen,
            items_included=prepared.items_included,
            items_truncated=prepared.items_truncated,
            items_skipped_for_budget=prepared.items_skipped_for_budget,
        )
        return prepared

    def _prepare(self, *, scope_id: str, query: str, max_bytes: int) -> PreparedContext:
        with read_snapshot():
            head = memory_head(scope_id=scope_id)
            terms = analyzer.query_terms(query)
            recurring = recurring_terms(terms, recent_prompt_terms(scope_id=scope_id, query=query))
            memory_hits = [
                MemoryHit(
                    citation=MemoryCitation(
                        memory_ref=ArtifactRef(MEMORY_FAMILY, MEMORY_ARTIFACT_ID, hit.revision),
                        entry_id=hit.entry_id,
                        entry_version_id=hit.entry_version_id,
                    ),
                    text=hit.text,
                )
                for hit in memory_search_at(
                    scope_id=scope_id,
                    head=head,
                    terms=terms,
                    limit=MEMORY_WINDOW,
                    recurring=recurring,
                )
            ]
            experience_hits = experience_search_at(
                scope_id=scope_id, terms=terms, limit=EXPERIENCE_WINDOW, recurring=recurring
            )
        if not memory_hits and not experience_hits:
            return EMPTY
        return self.builder.build(
            head=ArtifactRef(MEMORY_FAMILY, MEMORY_ARTIFACT_ID, head),
            memory_hits=memory_hits,
            experience_hits=experience_hits,
            max_bytes=max_bytes,
        )


def public_payload(prepared: PreparedContext) -> dict[str, Any]:
    """The response body: exactly the four public fields, nothing internal."""
    return {
        "schema": prepared.schema,
        "status": prepared.status,
        "content": prepared.content,
        "content_bytes": prepared.content_bytes,
    }
