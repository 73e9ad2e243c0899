"""Rebuilding and checking what is derived from approved Experience (DESIGN.md §3), as
the ``experience`` family of ``powercontext.maintenance``.

Derived: the ``searchable_text`` on each ``experience`` head (from the head revision's
content), the per-scope term statistics and the Experience full-text index (from the
heads). Authoritative: the Experience revisions and the candidates that produced them.
A head revision whose hash does not verify is never derived from: its head carries an
empty searchable_text (it matches nothing) and it counts in no term statistics.
"""

import json
import time
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import connection, transaction

from experience.models import Candidate, CandidateStatus, CandidateVersion, ExperienceTermStat
from experience.redaction import candidate_decision_digest, candidate_version_digest, version_key
from experience.search_index import EXPERIENCE_INDEX
from experience.term_stats import term_stats_expected, term_stats_rebuild
from experience.values import EXPERIENCE_FAMILY, Proposal, searchable_text
from powercontext.artifacts import revision_intact
from powercontext.chain import GENESIS_HASH
from powercontext.models import ArtifactHead, ArtifactRevision
from powercontext.redaction_log import (
    ARTIFACT_REVISION,
    CANDIDATE_DECISION,
    CANDIDATE_VERSION,
    latest_digests,
)
from powercontext.reports import CheckResult, Progress, RebuildReport
from powercontext.snapshot import read_snapshot


def experience_rebuild(
    *, scope_id: str | None = None, progress: Progress | None = None
) -> RebuildReport:
    """Rewrite the Experience heads' searchable_text from their head revisions and the
    term statistics from the heads, for one scope or all, then the full-text index rows of
    those heads, in one transaction (a reader sees the old state or the new one, never a
    partial index). Idempotent.

    Only a head revision that verifies (``head_contents``) is indexed: one that fails is
    left out of the searchable_text, the term statistics and the index, and reported by
    id. The heads are few (one per approved lesson) and read at once.
    """
    started = time.monotonic()
    recreate = EXPERIENCE_INDEX.status()
    if not connection.features.can_rollback_ddl and recreate:
        # OceanBase commits DDL implicitly: a missing index is created before the
        # transaction (it covers the heads already there), never inside it.
        EXPERIENCE_INDEX.rebuild()
    unverified: list[tuple[str, str]] = []
    with transaction.atomic():
        heads = list(_heads(scope_id).select_for_update().order_by("pk"))
        texts = []
        for head, content in head_contents(heads):
            if isinstance(content, dict):
                text = searchable_text(Proposal.from_payload(content))
                texts.append((head.scope_id, text))
            else:
                unverified.append((head.scope_id, f"{head.artifact_id}@{head.revision}"))
                text = ""
            if text != head.searchable_text:
                ArtifactHead.objects.filter(pk=head.pk, revision=head.revision).update(
                    searchable_text=text
                )
        term_stats_rebuild(texts, scope_id=scope_id)
        # A recreated index is filled for every scope: it was empty.
        EXPERIENCE_INDEX.rebuild(None if recreate else scope_id)
    if progress:
        progress(len(heads), len(heads))
    if recreate:
        index = f"recreated ({recreate})"
    else:
        index = "rebuilt" if scope_id is None else "rebuilt for this scope"
    return RebuildReport(
        "experience",
        scopes=len({head.scope_id for head in heads}),
        entries=len(heads),
        unit="approved heads",
        index=index,
        seconds=time.monotonic() - started,
        unverified=unverified,
    )


def head_contents(heads: list[ArtifactHead]) -> Iterator[tuple[ArtifactHead, dict | str]]:
    """Each head with its head revision's content, or with why it may not be used:
    the revision is missing, its hash does not recompute from its content, its
    previous_hash is not its predecessor's hash, or its content is not a proposal."""
    wanted = {(head.scope_id, head.artifact_id): head.revision for head in heads}
    scopes = {head.scope_id for head in heads}
    redacted = latest_digests(ARTIFACT_REVISION, next(iter(scopes)) if len(scopes) == 1 else None)
    found: dict[tuple[str, str, int], tuple[str, str, str]] = {}
    if heads:
        # Streamed: only each head revision and its predecessor are kept.
        rows = ArtifactRevision.objects.filter(family=EXPERIENCE_FAMILY)
        if len(scopes) == 1:
            rows = rows.filter(scope_id=next(iter(scopes)))
        for scope, artifact, number, content, previous, own in rows.values_list(
            "scope_id", "artifact_id", "revision", "content", "previous_hash", "revision_hash"
        ).iterator(chunk_size=2000):
            head_revision = wanted.get((scope, artifact))
            if head_revision is not None and number in (head_revision, head_revision - 1):
                found[(scope, artifact, number)] = (content, previous, own)
    for head in heads:
        row = found.get((head.scope_id, head.artifact_id, head.revision))
        if row is None:
            yield head, "head names a missing revision"
            continue
        content, previous, own = row
        where = f"{EXPERIENCE_FAMILY}/{head.artifact_id}@{head.revision}"
        intact = revision_intact(
            previous_hash=previous,
            content=content,
            revision_hash=own,
            redacted_digest=redacted.get((head.scope_id, where)),
        )
        if not intact:
            yield head, "head revision's revision_hash does not match its content"
            continue
        if head.revision == 1:
            predecessor_hash: str | None = GENESIS_HASH
        else:
            prior = found.get((head.scope_id, head.artifact_id, head.revision - 1))
            predecessor_hash = prior[2] if prior else None
        if previous != predecessor_hash:
            yield head, "head revision's previous_hash does not match the prior revision"
            continue
        try:
            payload = json.loads(content)
            Proposal.from_payload(payload)
        except (ValueError, KeyError, TypeError, AttributeError):
            yield head, "head revision's content is not a proposal"
            continue
        yield head, payload


def experience_check(*, scope_id: str | None = None) -> list[CheckResult]:
    """What disagrees between the Experience revisions, their heads (searchable_text),
    the term statistics and the approved candidates, in one scope or all, read in one
    snapshot so that an approval committing meanwhile cannot read as a finding. The
    index probe is global (the index is one structure). Findings name ids, never
    content."""
    result = CheckResult("experience")
    index_problem = EXPERIENCE_INDEX.status()
    if index_problem:
        result.add(None, "full-text index", index_problem)
    with read_snapshot():
        texts = _check_heads(scope_id, result)
        _check_term_stats(scope_id, texts, result)
        _check_approvals(scope_id, result)
        _check_redacted_candidates(scope_id, result)
    return [result]


def _check_redacted_candidates(scope_id: str | None, result: CheckResult) -> None:
    """A redacted candidate version, or rejection reason, still says exactly what its
    redaction left (the digest its record keeps): it has no hash of its own."""
    versions = latest_digests(CANDIDATE_VERSION, scope_id)
    if versions:
        rows = CandidateVersion.objects.select_related("candidate")
        if scope_id is not None:
            rows = rows.filter(candidate__scope_id=scope_id)
        for version in rows.iterator(chunk_size=500):
            digest = versions.get((version.candidate.scope_id, version_key(version)))
            if digest is not None and digest != candidate_version_digest(version):
                result.add(
                    version.candidate.scope_id,
                    version_key(version),
                    "candidate version differs from what its redaction left",
                )
    decisions = latest_digests(CANDIDATE_DECISION, scope_id)
    for (scope, candidate_id), digest in sorted(decisions.items()):
        reason = (
            Candidate.objects.filter(scope_id=scope, candidate_id=candidate_id)
            .values_list("decision_reason", flat=True)
            .first()
        )
        if digest != candidate_decision_digest(reason):
            result.add(scope, candidate_id, "rejection reason differs from what its redaction left")


def experience_index_status() -> str | None:
    """None when the Experience full-text index exists, else why not (start-up probe)."""
    return EXPERIENCE_INDEX.status()


def _check_heads(scope_id: str | None, result: CheckResult) -> list[tuple[str, str]]:
    """Check each head's revision and searchable_text; return (scope_id, expected text)
    per head whose revision verifies (only those are indexed)."""
    texts = []
    for head, content in head_contents(list(_heads(scope_id).order_by("pk"))):
        result.checked += 1
        if not isinstance(content, dict):
            where = f"{head.artifact_id}@{head.revision}"
            result.add(head.scope_id, where, f"{content}: it may not be indexed")
            if head.searchable_text:
                result.add(head.scope_id, head.artifact_id, "head is indexed from it all the same")
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
