"""Reads of candidates and approved Experience.

Only approval writes an ``experience`` artifact, so every Experience revision that exists
is an approved one; pending and rejected candidates exist only as candidate rows, which
nothing here (nor search, nor the Context Pack) ever turns into Experience.
"""

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import F, Q

from experience.exceptions import CandidateConflict, CandidateNotFound
from experience.models import Candidate, CandidateStatus, CandidateVersion, Experience
from experience.search_index import EXPERIENCE_INDEX
from experience.values import (
    EXPERIENCE_FAMILY,
    ApprovedExperience,
    ArtifactCandidate,
    CandidatePage,
    ExperienceFound,
    Proposal,
    experience_ref,
)
from powercontext.artifacts import revision_content
from powercontext.cursors import decode_cursor, encode_cursor
from powercontext.exceptions import ArtifactNotFound, InvalidRequest
from powercontext.models import ArtifactRevision
from powercontext.pages import json_text_bytes
from powercontext.refs import artifact_refs, source_refs
from powercontext.search import Considered, Query, SearchInconsistent

# -- candidates -----------------------------------------------------------------------


def candidate_of(candidate: Candidate, version: CandidateVersion) -> ArtifactCandidate:
    """The ArtifactCandidate: the head's status and decision, the current version's
    proposal and evidence."""
    target = None
    if version.target_artifact_id is not None and version.target_revision is not None:
        target = experience_ref(version.target_artifact_id, version.target_revision)
    result = None
    if candidate.result_artifact_id is not None and candidate.result_revision is not None:
        result = experience_ref(candidate.result_artifact_id, candidate.result_revision)
    return ArtifactCandidate(
        candidate_id=candidate.candidate_id,
        version=candidate.version,
        family=candidate.family,
        status=candidate.status,
        proposal=proposal_of(version),
        source_refs=source_refs(json.loads(version.source_refs)),
        artifact_refs=artifact_refs(json.loads(version.artifact_refs)),
        target=target,
        reason=version.reason,
        result_artifact=result,
        decision_reason=candidate.decision_reason,
    )


def proposal_of(version: CandidateVersion) -> Proposal:
    return Proposal(version.situation, version.action, version.outcome, version.lesson)


def current_version(candidate: Candidate) -> CandidateVersion:
    return CandidateVersion.objects.get(candidate=candidate, version=candidate.version)


def candidate_get(
    *, scope_id: str, candidate_id: str, expected_version: int | None = None
) -> ArtifactCandidate:
    """The candidate as it is now. With ``expected_version``, CandidateConflict unless
    that is still its current version."""
    candidate = Candidate.objects.filter(scope_id=scope_id, candidate_id=candidate_id).first()
    if candidate is None:
        raise CandidateNotFound()
    if expected_version is not None and expected_version != candidate.version:
        raise CandidateConflict()
    return candidate_of(candidate, current_version(candidate))


@dataclass(frozen=True)
class _ListCursor:
    """Where a page ended, bound to the filters it was issued for."""

    filters: str
    created_at: datetime
    candidate_id: str

    def encode(self) -> str:
        return encode_cursor([self.filters, self.created_at.isoformat(), self.candidate_id])

    @classmethod
    def decode(cls, token: str, filters: str) -> "_ListCursor":
        cursor = decode_cursor(token, cls._parse)
        if cursor.filters != filters:
            raise InvalidRequest("cursor", "The cursor was issued for other filters.")
        return cursor

    @classmethod
    def _parse(cls, values: list[Any]) -> "_ListCursor":
        bound, created, after = values
        if not (isinstance(bound, str) and isinstance(created, str) and isinstance(after, str)):
            raise ValueError(values)
        created_at = datetime.fromisoformat(created)
        if created_at.tzinfo is None:
            raise ValueError(values)
        # Compared in UTC: a time with no UTC equivalent (year 1 at +01:00) is no cursor.
        return cls(bound, created_at.astimezone(UTC), after)


def _filters_key(scope_id: str, status: str, family: str | None) -> str:
    raw = json.dumps([scope_id, status, family])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


# A list page stops before the candidate that would take its candidates past this many
# bytes (proposal, reasons and references, as the response's JSON carries them, escapes
# included), and always holds at least one:
# 100 candidates of four 8,000-character fields could otherwise make one response of
# over 10 MB (docs/RELIABILITY.md, "Bounded responses").
LIST_PAGE_BYTES = 1024 * 1024
_VERSIONS_PER_READ = 20


def _version_bytes(candidate: Candidate, version: CandidateVersion) -> int:
    texts = (
        version.situation,
        version.action,
        version.outcome,
        version.lesson,
        version.reason or "",
        candidate.decision_reason or "",
    )
    # As the response carries them: JSON-escaped; the references are JSON text already.
    references = (version.source_refs, version.artifact_refs)
    return sum(json_text_bytes(text) for text in texts) + sum(
        len(text.encode()) for text in references
    )


def candidate_list(
    *,
    scope_id: str,
    status: str = CandidateStatus.PENDING,
    family: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> CandidatePage:
    """Candidates newest first (ties by candidate id), one keyset page at a time."""
    filters = _filters_key(scope_id, status, family)
    candidates = Candidate.objects.filter(scope_id=scope_id, status=status)
    if family is not None:
        candidates = candidates.filter(family=family)
    if cursor is not None:
        position = _ListCursor.decode(cursor, filters)
        candidates = candidates.filter(
            Q(created_at__lt=position.created_at)
            | Q(created_at=position.created_at, candidate_id__gt=position.candidate_id)
        )
    rows = list(candidates.order_by("-created_at", "candidate_id")[: limit + 1])
    found: list[ArtifactCandidate] = []
    page_bytes = 0
    next_cursor = None
    # Versions (the large part) are read a few candidates at a time, so a page that
    # fills its bytes early reads little more.
    for start in range(0, len(rows), _VERSIONS_PER_READ):
        chunk = rows[start : start + _VERSIONS_PER_READ]
        versions = {
            version.candidate_id: version
            for version in CandidateVersion.objects.filter(
                candidate_id__in=[candidate.candidate_id for candidate in chunk],
                version=F("candidate__version"),
            )
        }
        for candidate in chunk:
            version = versions[candidate.candidate_id]
            size = _version_bytes(candidate, version)
            if len(found) == limit or (found and page_bytes + size > LIST_PAGE_BYTES):
                last = rows[len(found) - 1]
                next_cursor = _ListCursor(filters, last.created_at, last.candidate_id).encode()
                break
            found.append(candidate_of(candidate, version))
            page_bytes += size
        if next_cursor is not None:
            break
    return CandidatePage(candidates=found, next_cursor=next_cursor)


# -- approved Experience --------------------------------------------------------------


def experience_revision(*, scope_id: str, artifact_id: str, revision: int) -> ArtifactRevision:
    """The approved Experience revision, or ArtifactNotFound."""
    found = ArtifactRevision.objects.filter(
        scope_id=scope_id, family=EXPERIENCE_FAMILY, artifact_id=artifact_id, revision=revision
    ).first()
    if found is None:
        raise ArtifactNotFound()
    return found


def experience_get(
    *, scope_id: str, family: str, artifact_id: str, revision: int
) -> ApprovedExperience:
    """Exactly the cited Experience revision, even after the Experience was revised.

    Anything that is not an approved Experience revision (another family, a candidate id,
    an unknown revision) is ArtifactNotFound.
    """
    if family != EXPERIENCE_FAMILY:
        raise ArtifactNotFound()
    content = revision_content(
        experience_revision(scope_id=scope_id, artifact_id=artifact_id, revision=revision)
    )
    return ApprovedExperience(
        artifact=experience_ref(artifact_id, revision),
        content=Proposal.from_payload(content),
        source_refs=source_refs(content["source_refs"]),
        artifact_refs=artifact_refs(content["artifact_refs"]),
    )


def experience_search_at(
    *, scope_id: str, query: Query, limit: int, verdicts: list[Considered] | None = None
) -> list[ExperienceFound]:
    """Approved Experience of the scope that ``query`` finds, best first (ties by artifact
    id), each citing its exact head revision with its four fields; searched as Memory is
    (``powercontext.search.search``). When given, ``verdicts`` receives every candidate
    with the relevance decision's verdict (the desk's pack preview, from the same search).

    Run it inside the caller's read snapshot (``powercontext.snapshot.read_snapshot``) so
    the hits and the rest of the request see one committed state. Raises
    SearchInconsistent when the index describes another revision than the head.
    """
    found = EXPERIENCE_INDEX.search(query, scope_id=scope_id, limit=limit)
    if verdicts is not None:
        verdicts.extend(found.considered)
    ranked = [item.hit for item in found.hits]
    channels = {item.hit.cited_id: item.channels for item in found.hits}
    if not ranked:
        return []
    query_filter = Q()
    for hit in ranked:
        query_filter |= Q(artifact_id=hit.cited_id, revision=hit.version)
    contents = {
        row.artifact_id: revision_content(row)
        for row in ArtifactRevision.objects.filter(
            query_filter, scope_id=scope_id, family=EXPERIENCE_FAMILY
        )
    }
    hits = []
    for hit in ranked:
        content = contents.get(hit.cited_id)
        if content is None:
            raise SearchInconsistent()
        hits.append(
            ExperienceFound(
                artifact_ref=experience_ref(hit.cited_id, int(hit.version)),
                situation=content["situation"],
                action=content["action"],
                outcome=content["outcome"],
                lesson=content["lesson"],
                matched_by=channels[hit.cited_id],
            )
        )
    return hits


def experience_latest(*, scope_id: str, limit: int) -> list[ExperienceFound]:
    """The scope's ``limit`` most recently approved (or revised) Experience heads, newest
    first (ties by artifact id), each citing its head revision."""
    heads = (
        Experience.objects.filter(scope_id=scope_id)
        .order_by("-updated_at", "artifact_id")
        .values_list("artifact_id", "revision")[:limit]
    )
    found = []
    for artifact_id, revision in heads:
        content = revision_content(
            experience_revision(scope_id=scope_id, artifact_id=artifact_id, revision=revision)
        )
        found.append(
            ExperienceFound(
                artifact_ref=experience_ref(artifact_id, revision),
                situation=content["situation"],
                action=content["action"],
                outcome=content["outcome"],
                lesson=content["lesson"],
                matched_by=(),
            )
        )
    return found
