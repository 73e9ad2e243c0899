"""Rebuilding and checking what is derived from approved Experience (DESIGN.md §3), as
the ``experience`` family of ``powercontext.maintenance``.

Derived: the ``searchable_text`` on each ``experience`` head (from the head revision's
content), the per-scope term statistics and the Experience full-text index (from the
heads). Authoritative: the Experience revisions and the candidates that produced them.
"""

import time
from collections.abc import Iterable
from typing import Any

from django.db import connection, transaction

from experience.models import Candidate, CandidateStatus, ExperienceTermStat
from experience.term_stats import term_stats_expected, term_stats_rebuild
from experience.values import EXPERIENCE_FAMILY, Proposal, searchable_text
from powercontext.artifacts import revision_content
from powercontext.maintenance import CheckResult, Progress, RebuildReport
from powercontext.models import ArtifactHead, ArtifactRevision
from powercontext.search import search_backend
from powercontext.snapshot import read_snapshot


def experience_rebuild(
    *, scope_id: str | None = None, chunk_size: int = 1000, progress: Progress | None = None
) -> RebuildReport:
    """Rewrite the Experience heads' searchable_text from their head revisions and the
    term statistics from the heads, for one scope or all, then the full-text index from
    the heads, in one transaction (a reader sees the old state or the new one, never a
    partial index). Idempotent.

    The index is always rebuilt as a whole, from every scope's heads: it is one
    structure, and a scope's rows cannot be told from another's stray ones. The heads
    are few (one per approved lesson) and read at once, so ``chunk_size`` is unused.
    """
    started = time.monotonic()
    backend = search_backend()
    if not connection.features.can_rollback_ddl and backend.experience_index_status():
        # OceanBase commits DDL implicitly: a missing index is created before the
        # transaction (it covers the heads already there), never inside it.
        backend.experience_rebuild()
    with transaction.atomic():
        heads = list(_heads(scope_id).select_for_update().order_by("pk"))
        texts = []
        for head in heads:
            text = searchable_text(Proposal.from_payload(_head_content(head)))
            texts.append((head.scope_id, text))
            if text != head.searchable_text:
                ArtifactHead.objects.filter(pk=head.pk, revision=head.revision).update(
                    searchable_text=text
                )
        term_stats_rebuild(texts, scope_id=scope_id)
        backend.experience_rebuild()
    if progress:
        progress(len(heads), len(heads))
    return RebuildReport(
        "experience",
        scopes=len({head.scope_id for head in heads}),
        entries=len(heads),
        unit="approved heads",
        index="rebuilt (all scopes)",
        seconds=time.monotonic() - started,
    )


def experience_check(*, scope_id: str | None = None) -> list[CheckResult]:
    """What disagrees between the Experience revisions, their heads (searchable_text),
    the term statistics and the approved candidates, in one scope or all, read in one
    snapshot so that an approval committing meanwhile cannot read as a finding. The
    index probe is global (the index is one structure). Findings name ids, never
    content."""
    result = CheckResult("experience")
    index_problem = search_backend().experience_index_status()
    if index_problem:
        result.add(None, "full-text index", index_problem)
    with read_snapshot():
        texts = _check_heads(scope_id, result)
        _check_term_stats(scope_id, texts, result)
        _check_approvals(scope_id, result)
    return [result]


def experience_index_status() -> str | None:
    """None when the Experience full-text index exists, else why not (start-up probe)."""
    return search_backend().experience_index_status()


def _check_heads(scope_id: str | None, result: CheckResult) -> list[tuple[str, str]]:
    """Check each head's searchable_text; return (scope_id, expected text) per head."""
    texts = []
    for head in _heads(scope_id).order_by("pk"):
        result.checked += 1
        try:
            content = _head_content(head)
        except ArtifactRevision.DoesNotExist:
            result.add(head.scope_id, head.artifact_id, "head names a missing revision")
            continue
        text = searchable_text(Proposal.from_payload(content))
        texts.append((head.scope_id, text))
        if head.searchable_text != text:
            result.add(head.scope_id, head.artifact_id, "head has stale searchable_text")
    return texts


def _check_term_stats(
    scope_id: str | None, texts: Iterable[tuple[str, str]], result: CheckResult
) -> None:
    expected = term_stats_expected(texts)
    stored = {
        (scope, term): documents
        for scope, term, documents in _scoped(ExperienceTermStat, scope_id).values_list(
            "scope_id", "term", "documents"
        )
    }
    keys = stored.keys() | expected.keys()
    differing = {
        scope for scope, term in keys if stored.get((scope, term)) != expected.get((scope, term))
    }
    for scope in sorted(differing):
        result.add(scope, "term statistics", "disagree with the heads")


def _check_approvals(scope_id: str | None, result: CheckResult) -> None:
    approved = set(
        _scoped(Candidate, scope_id)
        .filter(status=CandidateStatus.APPROVED)
        .values_list("scope_id", "result_artifact_id", "result_revision")
    )
    revisions = set(
        _scoped(ArtifactRevision, scope_id)
        .filter(family=EXPERIENCE_FAMILY)
        .values_list("scope_id", "artifact_id", "revision")
    )
    for scope, artifact_id, revision in sorted(revisions - approved):
        result.add(scope, f"{artifact_id}@{revision}", "has no approved candidate")
    for scope, artifact_id, revision in sorted(approved - revisions):
        result.add(
            scope, f"{artifact_id}@{revision}", "named by an approved candidate, but missing"
        )


def _heads(scope_id: str | None) -> Any:
    return _scoped(ArtifactHead, scope_id).filter(family=EXPERIENCE_FAMILY)


def _scoped(model: Any, scope_id: str | None) -> Any:
    queryset = model.objects.all()
    return queryset if scope_id is None else queryset.filter(scope_id=scope_id)


def _head_content(head: ArtifactHead) -> dict:
    return revision_content(
        ArtifactRevision.objects.get(
            scope_id=head.scope_id,
            family=EXPERIENCE_FAMILY,
            artifact_id=head.artifact_id,
            revision=head.revision,
        )
    )
