"""Rebuilding and checking what is derived from approved Experience (DESIGN.md §3).

Derived: the ``searchable_text`` on each ``experience`` head (from the head revision's
content) and the Experience full-text index (from the heads). Authoritative: the
Experience revisions and the candidates that produced them.
"""

from django.db import connection, transaction

from experience.models import Candidate, CandidateStatus, ExperienceTermStat
from experience.term_stats import term_stats_expected, term_stats_rebuild
from experience.values import EXPERIENCE_FAMILY, Proposal, searchable_text
from powercontext.artifacts import revision_content
from powercontext.models import ArtifactHead, ArtifactRevision
from powercontext.search import search_backend


def experience_rebuild_index() -> int:
    """Rewrite every Experience head's searchable_text from its head revision, then the
    full-text index from the heads, in one transaction (a reader sees the old state or
    the new one, never a partial index). Returns the number of Experience heads."""
    backend = search_backend()
    if not connection.features.can_rollback_ddl and backend.experience_index_status():
        # OceanBase commits DDL implicitly: a missing index is created before the
        # transaction (it covers the heads already there), never inside it.
        backend.experience_rebuild()
    with transaction.atomic():
        heads = list(
            ArtifactHead.objects.select_for_update().filter(family=EXPERIENCE_FAMILY).order_by("pk")
        )
        texts = []
        for head in heads:
            text = searchable_text(Proposal.from_payload(_head_content(head)))
            texts.append((head.scope_id, text))
            if text != head.searchable_text:
                ArtifactHead.objects.filter(pk=head.pk, revision=head.revision).update(
                    searchable_text=text
                )
        term_stats_rebuild(texts)
        backend.experience_rebuild()
    return len(heads)


def _head_content(head: ArtifactHead) -> dict:
    return revision_content(
        ArtifactRevision.objects.get(
            scope_id=head.scope_id,
            family=EXPERIENCE_FAMILY,
            artifact_id=head.artifact_id,
            revision=head.revision,
        )
    )


def experience_integrity_problems() -> list[str]:
    """What disagrees between the Experience revisions, their heads and the candidates.
    Empty when consistent. Messages name ids and counts, never content."""
    problems = []
    index_problem = search_backend().experience_index_status()
    if index_problem:
        problems.append(f"experience index: {index_problem}")
    texts = []
    for head in ArtifactHead.objects.filter(family=EXPERIENCE_FAMILY).order_by("pk"):
        try:
            content = _head_content(head)
        except ArtifactRevision.DoesNotExist:
            problems.append(f"experience head {head.artifact_id} names a missing revision")
            continue
        text = searchable_text(Proposal.from_payload(content))
        texts.append((head.scope_id, text))
        if head.searchable_text != text:
            problems.append(f"experience head {head.artifact_id} has stale searchable_text")
    stored = {
        (scope_id, term): documents
        for scope_id, term, documents in ExperienceTermStat.objects.values_list(
            "scope_id", "term", "documents"
        )
    }
    if stored != term_stats_expected(texts):
        problems.append("experience term statistics disagree with the heads")
    approved = {
        (scope, artifact_id, revision)
        for scope, artifact_id, revision in Candidate.objects.filter(
            status=CandidateStatus.APPROVED
        ).values_list("scope_id", "result_artifact_id", "result_revision")
    }
    revisions = set(
        ArtifactRevision.objects.filter(family=EXPERIENCE_FAMILY).values_list(
            "scope_id", "artifact_id", "revision"
        )
    )
    for _scope, artifact_id, revision in sorted(revisions - approved):
        problems.append(f"experience {artifact_id}@{revision} has no approved candidate")
    for _scope, artifact_id, revision in sorted(approved - revisions):
        problems.append(f"approved candidate names missing experience {artifact_id}@{revision}")
    return problems
