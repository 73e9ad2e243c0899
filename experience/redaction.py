"""Redacting secrets left in stored candidates and approved Experience
(``manage.py redact_secrets``, and an approval of a candidate version stored before
proposals were redacted): the ``experience`` family's ``redact`` in
``powercontext.maintenance``.

A candidate version is immutable but carries no hash: a redaction rewrites its four
fields and its reason in place and appends a redaction record holding the digest of what
it now says (:func:`candidate_version_digest`), which ``check_integrity`` then holds it
to. A rejection's reason likewise. Experience revisions are the kernel's and are redacted
through ``powercontext.stored_secrets.revisions_redact``; a head revision's derived rows
(searchable text, term counts, full-text row) follow in the same transaction and its
vector is dropped for ``rebuild_index`` to embed again.
"""

import json

from django.db import transaction

from experience.models import Candidate, CandidateVersion
from experience.search_index import EXPERIENCE_INDEX
from experience.term_stats import term_stats_adjust
from experience.values import EXPERIENCE_FAMILY, PROPOSAL_FIELDS, Proposal, searchable_text
from powercontext import redaction_log
from powercontext.artifacts import revision_content
from powercontext.capture_ids import CAPTURE_ID, keyed_refs
from powercontext.chain import canonical_json, tagged_sha256
from powercontext.models import ArtifactHead, ArtifactRevision
from powercontext.redaction import Redactions
from powercontext.reports import RedactReport
from powercontext.stored_secrets import revisions_redact

_VERSION_DOMAIN = b"powercontext.candidate-version.v1\x00"
_DECISION_DOMAIN = b"powercontext.candidate-decision.v1\x00"


def candidate_version_digest(version: CandidateVersion) -> str:
    fields = {name: getattr(version, name) for name in (*PROPOSAL_FIELDS, "reason")}
    return tagged_sha256(_VERSION_DOMAIN, canonical_json(fields))


def candidate_decision_digest(reason: str | None) -> str:
    return tagged_sha256(_DECISION_DOMAIN, canonical_json(reason))


def version_key(version: CandidateVersion) -> str:
    return f"{version.candidate_id} v{version.version}"


def candidate_version_redact(
    version: CandidateVersion, *, scope_id: str, reason: str
) -> dict[str, int]:
    """Redact the secrets in a stored candidate version, in place, inside the caller's
    transaction (holding the candidate's lock); what went, by kind (``{}``: nothing)."""
    redactions = Redactions()
    fields: dict[str, str | None] = {
        name: redactions.stored(getattr(version, name)) for name in PROPOSAL_FIELDS
    }
    fields["reason"] = None if version.reason is None else redactions.stored(version.reason)
    if not redactions.count:
        return {}
    CandidateVersion.objects.filter(pk=version.pk).update(**fields)
    for name, value in fields.items():
        setattr(version, name, value)
    redaction_log.record_append(
        scope_id=scope_id,
        target=redaction_log.CANDIDATE_VERSION,
        target_key=version_key(version),
        action=redaction_log.REDACT,
        reason=reason,
        kinds=redactions.kinds,
        digest=candidate_version_digest(version),
    )
    return dict(redactions.kinds)


def experience_redact(*, scope_id: str | None, reason: str, dry_run: bool) -> list[RedactReport]:
    """Redact the secrets in stored candidate versions, rejection reasons and Experience
    revisions (one scope or all); with ``dry_run`` only count them."""
    versions = RedactReport("candidate versions")
    rows = CandidateVersion.objects.select_related("candidate")
    if scope_id is not None:
        rows = rows.filter(candidate__scope_id=scope_id)
    for version in rows.order_by("pk").iterator(chunk_size=200):
        found = Redactions()
        for name in PROPOSAL_FIELDS:
            found.stored(getattr(version, name))
        if version.reason is not None:
            found.stored(version.reason)
        if not found.count:
            continue
        if not dry_run:
            with transaction.atomic():
                locked = CandidateVersion.objects.select_for_update().get(pk=version.pk)
                found.kinds.clear()
                found.kinds.update(
                    candidate_version_redact(
                        locked, scope_id=version.candidate.scope_id, reason=reason
                    )
                )
        if found.count:
            versions.add(dict(found.kinds))
    decisions = RedactReport("candidate rejection reasons")
    candidates = Candidate.objects.exclude(decision_reason=None)
    if scope_id is not None:
        candidates = candidates.filter(scope_id=scope_id)
    for pk, text in candidates.order_by("pk").values_list("pk", "decision_reason"):
        found = Redactions()
        redacted = found.stored(text)
        if not found.count:
            continue
        decisions.add(dict(found.kinds))
        if dry_run:
            continue
        with transaction.atomic():
            candidate = Candidate.objects.select_for_update().get(pk=pk)
            if candidate.decision_reason != text:
                continue
            Candidate.objects.filter(pk=pk).update(decision_reason=redacted)
            redaction_log.record_append(
                scope_id=candidate.scope_id,
                target=redaction_log.CANDIDATE_DECISION,
                target_key=candidate.candidate_id,
                action=redaction_log.REDACT,
                reason=reason,
                kinds=found.kinds,
                digest=candidate_decision_digest(redacted),
            )
    references = RedactReport("candidate version source references")
    _key_version_refs(rows, references, dry_run)
    revisions = RedactReport("experience revisions")
    revisions_redact(
        family=EXPERIENCE_FAMILY,
        report=revisions,
        scope_id=scope_id,
        reason=reason,
        dry_run=dry_run,
        after=_head_follows,
    )
    return [versions, references, decisions, revisions]


def _key_version_refs(rows, report: RedactReport, dry_run: bool) -> None:
    """Key the capture ids candidate versions cite as the hook sent them (a digest of the
    prompt as typed, stored so before proposals keyed them: ``powercontext.capture_ids``).
    No hash covers a version's references, so each is rewritten in place."""
    cited = rows.filter(source_refs__contains="prompt:").values_list("pk", "source_refs")
    for pk, stored in cited.iterator(chunk_size=200):
        refs, keyed = keyed_refs(json.loads(stored))
        if not keyed:
            continue
        if not dry_run:
            # Unchanged since it was read, or the next run looks again.
            CandidateVersion.objects.filter(pk=pk, source_refs=stored).update(
                source_refs=canonical_json(refs)
            )
        report.add({CAPTURE_ID: keyed})


def _head_follows(revision: ArtifactRevision) -> None:
    """When the redacted revision is its Experience's head, rewrite what search derives
    from it, and drop its vector."""
    head = ArtifactHead.objects.filter(
        scope_id=revision.scope_id,
        family=EXPERIENCE_FAMILY,
        artifact_id=revision.artifact_id,
        revision=revision.revision,
    ).first()
    if head is None:
        return
    text = searchable_text(Proposal.from_payload(revision_content(revision)))
    term_stats_adjust(scope_id=head.scope_id, removed=head.searchable_text, added=text)
    ArtifactHead.objects.filter(pk=head.pk).update(searchable_text=text)
    EXPERIENCE_INDEX.write(
        row_key=head.pk,
        scope_id=head.scope_id,
        cited_id=head.artifact_id,
        version=head.revision,
        text=text,
    )
    EXPERIENCE_INDEX.drop_vectors(scope_id=head.scope_id, cited_id=head.artifact_id)
