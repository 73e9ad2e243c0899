"""Writes of the Experience family: proposing, revising and deciding candidates, and the
reviewers' personal API tokens.

The HTTP API and the admin call these same functions; each owns its transaction, its
permission and state checks and its audit record. Order of the state checks, everywhere:
unknown candidate (CandidateNotFound), then a decided one (CandidateTerminal, which wins),
then a stale ``expected_version`` (CandidateConflict).
"""

import dataclasses
import json
import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.utils import timezone

from experience.exceptions import CandidateConflict, CandidateNotFound, CandidateTerminal
from experience.models import (
    Candidate,
    CandidateStatus,
    CandidateVersion,
    ReviewerToken,
)
from experience.redaction import candidate_version_redact
from experience.reviewers import can_review, require_reviewer
from experience.search_index import EXPERIENCE_INDEX, approval_documents, proposal_document
from experience.selectors import candidate_of, current_version, proposal_of
from experience.term_stats import term_stats_adjust
from experience.tokens import TOKEN_PREFIX, token_hash
from experience.values import (
    EXPERIENCE_FAMILY,
    MAX_REFS,
    REASON_MAX_CHARS,
    ArtifactCandidate,
    Proposal,
    new_candidate_id,
    new_experience_id,
    searchable_text,
)
from powercontext.artifacts import head_advance, head_revision, revision_append
from powercontext.capabilities import capabilities
from powercontext.capture_ids import keyed_refs, stored_source_id
from powercontext.chain import canonical_json
from powercontext.exceptions import (
    ArtifactNotFound,
    InvalidRequest,
    RevisionConflict,
)
from powercontext.models import ArtifactHead, ArtifactRevision, SourceRecord
from powercontext.redaction import Redactions
from powercontext.refs import ArtifactRef

REVIEWER_GROUP = "Experience reviewers"
AGENT = "agent"


def reviewer_label(user: Any) -> str:
    return f"reviewer:{user.get_username()}"


# -- proposing and revising -----------------------------------------------------------


def _validate_refs(source_refs: list[dict[str, Any]], artifact_refs: list[dict[str, Any]]) -> None:
    if len(source_refs) > MAX_REFS:
        raise InvalidRequest("source_refs", f"At most {MAX_REFS} references.")
    if len(artifact_refs) > MAX_REFS:
        raise InvalidRequest("artifact_refs", f"At most {MAX_REFS} references.")
    if not source_refs and not artifact_refs:
        raise InvalidRequest(
            "source_refs", "A proposal needs at least one source or artifact reference."
        )


def _validate_reason(field: str, reason: str | None, *, required: bool = False) -> None:
    if reason is None:
        if required:
            raise InvalidRequest(field, "A reason is required.")
        return
    if required and not reason.strip():
        raise InvalidRequest(field, "Must contain a non-space character.")
    if len(reason) > REASON_MAX_CHARS:
        raise InvalidRequest(field, f"Must be at most {REASON_MAX_CHARS} characters.")


def _check_artifact_refs(scope_id: str, artifact_refs: list[dict[str, Any]]) -> None:
    """Evidence must exist: every cited artifact revision is in this scope."""
    families = set(capabilities()["artifact_families"])
    for ref in artifact_refs:
        exists = ref["family"] in families and (
            ArtifactRevision.objects.filter(
                scope_id=scope_id,
                family=ref["family"],
                artifact_id=ref["artifact_id"],
                revision=ref["revision"],
            ).exists()
        )
        if not exists:
            raise ArtifactNotFound("A cited artifact revision does not exist in this scope.")


def _check_source_refs(
    scope_id: str, source_refs: list[dict[str, Any]], field: str = "source_refs"
) -> None:
    """Evidence must exist: every cited source was captured in this scope (422 on the
    reference, ``source_refs.N``, as the serializer would name it)."""
    for index, ref in enumerate(source_refs):
        captured = SourceRecord.objects.filter(
            scope_id=scope_id,
            source_type=ref["name"],
            source_id=stored_source_id(ref["source_id"]),
        ).exists()
        if not captured:
            raise InvalidRequest(
                f"{field}.{index}",
                "No source with this name and source_id was captured in this scope "
                "(capture it first: POST /v1/sources/content).",
            )


def _check_target_is_head(scope_id: str, target: ArtifactRef) -> None:
    """The target must name the current revision of an Experience of this scope."""
    if target.family != EXPERIENCE_FAMILY:
        raise InvalidRequest("target.family", "Only an experience can be revised.")
    head = head_revision(
        scope_id=scope_id, family=EXPERIENCE_FAMILY, artifact_id=target.artifact_id
    )
    if head == 0 or target.revision > head:
        raise ArtifactNotFound()
    if target.revision != head:
        raise RevisionConflict("The target Experience has a newer revision.")


def experience_propose(
    *,
    scope_id: str,
    proposal: Proposal,
    source_refs: list[dict[str, Any]],
    artifact_refs: list[dict[str, Any]],
    target: ArtifactRef | None = None,
    reason: str | None = None,
    proposed_by: str = AGENT,
) -> ArtifactCandidate:
    """Create a pending candidate (version 1) and return its ArtifactCandidate.

    ``target`` names the current revision of the Experience the proposal would revise.
    Raises InvalidRequest (limits, no evidence, a cited source never captured in the
    scope), ArtifactNotFound (a cited or target artifact revision that does not exist),
    RevisionConflict (a target that is not the current revision). Nothing is searchable
    until a reviewer approves it. Secrets in the proposal and the reason are replaced by
    markers before anything is stored (the result's ``redacted`` counts them).
    """
    proposal.validate()
    _validate_refs(source_refs, artifact_refs)
    _validate_reason("reason", reason)
    redactions = Redactions()
    proposal, reason = _redacted(proposal, redactions), redactions.optional(reason)
    now = timezone.now()
    with transaction.atomic():
        _check_source_refs(scope_id, source_refs)
        _check_artifact_refs(scope_id, artifact_refs)
        if target is not None:
            _check_target_is_head(scope_id, target)
        candidate = Candidate.objects.create(
            candidate_id=new_candidate_id(),
            scope_id=scope_id,
            family=EXPERIENCE_FAMILY,
            version=1,
            status=CandidateStatus.PENDING,
            created_at=now,
            updated_at=now,
        )
        version = CandidateVersion.objects.create(
            candidate=candidate,
            version=1,
            **proposal.as_payload(),
            # A hook's capture id is a digest of the prompt as typed: cited as sent, it
            # would confirm guesses of what redaction took (``capture_ids``).
            source_refs=canonical_json(keyed_refs(source_refs)[0]),
            artifact_refs=canonical_json(artifact_refs),
            target_artifact_id=None if target is None else target.artifact_id,
            target_revision=None if target is None else target.revision,
            reason=reason,
            created_by=proposed_by,
            created_at=now,
        )
    return _with(candidate_of(candidate, version), redactions)


def _redacted(
    proposal: Proposal, redactions: Redactions, revised: CandidateVersion | None = None
) -> Proposal:
    return Proposal(
        **{
            name: redactions.text(value, carried=getattr(revised, name, None))
            for name, value in proposal.as_payload().items()
        }
    )


def _with(candidate: ArtifactCandidate, redactions: Redactions) -> ArtifactCandidate:
    return dataclasses.replace(candidate, redacted=dict(redactions.kinds))


def _lock_pending(scope_id: str, candidate_id: str, expected_version: int) -> Candidate:
    """The candidate, locked for this transaction, after the state checks.

    On SQLite the write transaction itself (BEGIN IMMEDIATE) already serialises deciders;
    elsewhere the row lock makes a second decider wait and then see the decision.
    """
    candidate = (
        Candidate.objects.select_for_update()
        .filter(scope_id=scope_id, candidate_id=candidate_id)
        .first()
    )
    if candidate is None:
        raise CandidateNotFound()
    if candidate.status != CandidateStatus.PENDING:
        raise CandidateTerminal()
    if candidate.version != expected_version:
        raise CandidateConflict()
    return candidate


def _move_candidate(candidate: Candidate, expected_version: int, **fields: Any) -> None:
    """Compare-and-swap on (pending, expected_version): the lock above makes a miss
    impossible, and this makes it impossible to rely on the lock alone."""
    moved = Candidate.objects.filter(
        pk=candidate.pk, status=CandidateStatus.PENDING, version=expected_version
    ).update(**fields)
    if moved != 1:
        raise CandidateConflict()
    for name, value in fields.items():
        setattr(candidate, name, value)


def candidate_revise(
    *,
    scope_id: str,
    candidate_id: str,
    expected_version: int,
    proposal: Proposal,
    reviewer: Any,
    source_refs: list[dict[str, Any]] | None = None,
    artifact_refs: list[dict[str, Any]] | None = None,
    reason: str | None = None,
) -> ArtifactCandidate:
    """Write version ``expected_version + 1`` of a pending candidate (a reviewer's edit).

    Refs and reason left as None keep the previous version's; the target never changes.
    Raises PermissionDenied, CandidateNotFound, CandidateTerminal, CandidateConflict,
    InvalidRequest, ArtifactNotFound.
    """
    require_reviewer(reviewer)
    proposal.validate()
    _validate_reason("reason", reason)
    redactions = Redactions()
    # The revised version's markers are the server's: kept as markers where the reviewer
    # keeps them (any other marker in the text is escaped as typed).
    revised = CandidateVersion.objects.filter(
        candidate__scope_id=scope_id, candidate__candidate_id=candidate_id, version=expected_version
    ).first()
    proposal = _redacted(proposal, redactions, revised)
    reason = redactions.optional(reason)
    now = timezone.now()
    with transaction.atomic():
        candidate = _lock_pending(scope_id, candidate_id, expected_version)
        previous = current_version(candidate)
        sources = _refs(previous.source_refs) if source_refs is None else source_refs
        artifacts = _refs(previous.artifact_refs) if artifact_refs is None else artifact_refs
        _validate_refs(sources, artifacts)
        if source_refs is not None:
            # Only the references the reviewer sends: those kept from the previous
            # version were checked when they were proposed (or predate the check).
            _check_source_refs(scope_id, source_refs)
        _check_artifact_refs(scope_id, artifacts)
        new_version = expected_version + 1
        _move_candidate(candidate, expected_version, version=new_version, updated_at=now)
        version = CandidateVersion.objects.create(
            candidate=candidate,
            version=new_version,
            **proposal.as_payload(),
            source_refs=canonical_json(keyed_refs(sources)[0]),
            artifact_refs=canonical_json(artifacts),
            target_artifact_id=previous.target_artifact_id,
            target_revision=previous.target_revision,
            reason=previous.reason if reason is None else reason,
            created_by=reviewer_label(reviewer),
            created_at=now,
        )
    return _with(candidate_of(candidate, version), redactions)


def _refs(stored: str) -> list[dict[str, Any]]:
    refs: list[dict[str, Any]] = json.loads(stored)
    return refs


# -- deciding -------------------------------------------------------------------------


def experience_content(version: CandidateVersion) -> dict[str, Any]:
    """What an Experience revision stores (canonical JSON in the kernel): the four fields,
    the evidence, and which candidate version it was approved from."""
    return {
        **proposal_of(version).as_payload(),
        "source_refs": _refs(version.source_refs),
        "artifact_refs": _refs(version.artifact_refs),
        "candidate": {"candidate_id": version.candidate_id, "version": version.version},
    }


def _write_experience(scope_id: str, version: CandidateVersion) -> tuple[str, int]:
    """Create or revise the Experience the candidate version describes: move its head by
    compare-and-swap with the new searchable_text, append the revision, and index it."""
    heads = ArtifactHead.objects.filter(scope_id=scope_id, family=EXPERIENCE_FAMILY)
    if version.target_artifact_id is not None:
        artifact_id, expected = version.target_artifact_id, version.target_revision
        head = (
            heads.filter(artifact_id=artifact_id)
            .values_list("id", "revision", "searchable_text")
            .first()
        )
        # Only the clearer message: head_advance's compare-and-swap below is what decides.
        if head is None or head[1] != expected:
            raise RevisionConflict("The target Experience has moved on since it was proposed.")
        head_id, previous_text = head[0], head[2]
    else:
        artifact_id, expected = new_experience_id(), 0
        head_id, previous_text = None, None
    text = searchable_text(proposal_of(version))
    revision = head_advance(
        scope_id=scope_id,
        family=EXPERIENCE_FAMILY,
        artifact_id=artifact_id,
        expected_revision=expected,
        searchable_text=text,
    )
    try:
        revision_append(
            scope_id=scope_id,
            family=EXPERIENCE_FAMILY,
            artifact_id=artifact_id,
            revision=revision,
            content=experience_content(version),
        )
    except IntegrityError as error:
        # Another writer appended this revision: the chain must not fork.
        raise RevisionConflict() from error
    if head_id is None:
        head_id = heads.filter(artifact_id=artifact_id).values_list("id", flat=True).get()
    term_stats_adjust(scope_id=scope_id, removed=previous_text, added=text)
    EXPERIENCE_INDEX.write(
        row_key=head_id, scope_id=scope_id, cited_id=artifact_id, version=revision, text=text
    )
    return artifact_id, revision


def candidate_approve(
    *, scope_id: str, candidate_id: str, expected_version: int, reviewer: Any
) -> ArtifactCandidate:
    """Approve a pending candidate at ``expected_version``, in one transaction: create the
    Experience (or revise its target), write the head's searchable_text and the index,
    mark the candidate approved with the result artifact, and record who and when.

    A version holding a secret (stored before proposals were redacted) is redacted
    first, and the result's ``redacted`` says so. Of two reviewers approving at once
    exactly one succeeds; the other gets
    CandidateTerminal. Raises PermissionDenied, CandidateNotFound, CandidateTerminal,
    CandidateConflict (stale version), RevisionConflict (the target moved on). On any
    error nothing is written.
    """
    require_reviewer(reviewer)
    # The vector is computed before the transaction (the model holds no lock).
    documents = approval_documents(scope_id, candidate_id, expected_version)
    embedded = EXPERIENCE_INDEX.embed(documents)
    with transaction.atomic():
        candidate = _lock_pending(scope_id, candidate_id, expected_version)
        version = current_version(candidate)
        # A version stored before proposals were redacted is redacted (and the redaction
        # recorded) before it becomes Experience: a secret never enters the chain.
        redactions = Redactions()
        redactions.kinds.update(
            candidate_version_redact(version, scope_id=scope_id, reason="approval")
        )
        artifact_id, revision = _write_experience(scope_id, version)
        document = proposal_document(proposal_of(version))
        EXPERIENCE_INDEX.write_vectors(
            embedded, scope_id=scope_id, cited_id=artifact_id, document=document
        )
        now = timezone.now()
        _move_candidate(
            candidate,
            expected_version,
            status=CandidateStatus.APPROVED,
            result_artifact_id=artifact_id,
            result_revision=revision,
            decided_by=reviewer,
            decided_by_username=reviewer.get_username(),
            decided_at=now,
            updated_at=now,
        )
    return _with(candidate_of(candidate, version), redactions)


def candidate_reject(
    *, scope_id: str, candidate_id: str, expected_version: int, reason: str, reviewer: Any
) -> ArtifactCandidate:
    """Reject a pending candidate at ``expected_version`` with a reason (1..2000
    characters, not blank), recording who and when. Nothing becomes searchable.

    Raises PermissionDenied, InvalidRequest, CandidateNotFound, CandidateTerminal,
    CandidateConflict.
    """
    require_reviewer(reviewer)
    _validate_reason("reason", reason, required=True)
    redactions = Redactions()
    reason = redactions.text(reason)
    with transaction.atomic():
        candidate = _lock_pending(scope_id, candidate_id, expected_version)
        now = timezone.now()
        _move_candidate(
            candidate,
            expected_version,
            status=CandidateStatus.REJECTED,
            decision_reason=reason,
            decided_by=reviewer,
            decided_by_username=reviewer.get_username(),
            decided_at=now,
            updated_at=now,
        )
        version = current_version(candidate)
    return _with(candidate_of(candidate, version), redactions)


# -- reviewer tokens ------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedToken:
    username: str
    token: str
    user_created: bool
    can_review: bool


class ReviewerNotFound(Exception):
    """No such user (and ``create`` was not asked for)."""


def reviewer_token_issue(*, username: str, create: bool = False) -> IssuedToken:
    """Issue a new personal API token for ``username``, replacing any previous one.

    With ``create``, a missing user is created (no password, so no admin login until one
    is set) in the reviewer group. Only the token's hash is stored; the token is returned
    once. Raises ReviewerNotFound.
    """
    user_model = get_user_model()
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        user = user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).first()
        created = False
        if user is None:
            if not create:
                raise ReviewerNotFound(username)
            # No password given: create_user stores an unusable one.
            user = user_model.objects.create_user(**{user_model.USERNAME_FIELD: username})
            user.groups.add(Group.objects.get(name=REVIEWER_GROUP))
            created = True
        ReviewerToken.objects.update_or_create(
            user=user, defaults={"token_hash": token_hash(token), "created_at": timezone.now()}
        )
    # has_perm caches permissions per instance, on its first call: none came before the
    # group was added, so this instance answers for the new membership too.
    return IssuedToken(username, token, created, can_review(user))


def reviewer_token_revoke(*, username: str) -> bool:
    """Delete ``username``'s token; False when there was none."""
    user_model = get_user_model()
    deleted, _ = ReviewerToken.objects.filter(
        **{f"user__{user_model.USERNAME_FIELD}": username}
    ).delete()
    return deleted > 0
