"""Plain values of the Experience family and the pure rules on them (no database)."""

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from powercontext.exceptions import InvalidRequest
from powercontext.refs import ArtifactRef, SourceRef
from powercontext.search import FamilyIndex

EXPERIENCE_FAMILY = "experience"
PROPOSAL_FIELDS = ("situation", "action", "outcome", "lesson")
PROPOSAL_FIELD_MAX_CHARS = 8000
REASON_MAX_CHARS = 2000
MAX_REFS = 32


def new_candidate_id() -> str:
    return "cand_" + uuid.uuid4().hex


def new_experience_id() -> str:
    return "exp_" + uuid.uuid4().hex


@dataclass(frozen=True)
class Proposal:
    situation: str
    action: str
    outcome: str
    lesson: str

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> "Proposal":
        return cls(**{name: payload[name] for name in PROPOSAL_FIELDS})

    def as_payload(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in PROPOSAL_FIELDS}

    def validate(self) -> None:
        """The contract's limits, checked again here because the admin calls the services
        too: each field 1..8000 characters with a non-space character."""
        for name in PROPOSAL_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise InvalidRequest(f"proposal.{name}", "Must contain a non-space character.")
            if len(value) > PROPOSAL_FIELD_MAX_CHARS:
                raise InvalidRequest(
                    f"proposal.{name}",
                    f"Must be at most {PROPOSAL_FIELD_MAX_CHARS} characters.",
                )


def experience_ref(artifact_id: str, revision: int) -> ArtifactRef:
    return ArtifactRef(EXPERIENCE_FAMILY, artifact_id, revision)


@dataclass(frozen=True)
class ArtifactCandidate:
    """A proposed Experience at its current version: the head's status and decision, the
    version's proposal and evidence."""

    candidate_id: str
    version: int
    family: str
    status: str
    proposal: Proposal
    source_refs: tuple[SourceRef, ...]
    artifact_refs: tuple[ArtifactRef, ...]
    target: ArtifactRef | None
    reason: str | None
    result_artifact: ArtifactRef | None
    decision_reason: str | None
    # What a write redacted from its input, by kind (None on a read).
    redacted: Mapping[str, int] | None = None


@dataclass(frozen=True)
class CandidatePage:
    """One page of candidates, newest first; ``next_cursor`` is None on the last page."""

    candidates: list[ArtifactCandidate]
    next_cursor: str | None


@dataclass(frozen=True)
class ApprovedExperience:
    """One approved Experience revision (its ``content``) and the evidence it was
    approved with."""

    artifact: ArtifactRef
    content: Proposal
    source_refs: tuple[SourceRef, ...]
    artifact_refs: tuple[ArtifactRef, ...]


@dataclass(frozen=True)
class ExperienceFound:
    """A search hit: the exact head revision of an approved Experience and its fields."""

    artifact_ref: ArtifactRef
    situation: str
    action: str
    outcome: str
    lesson: str
    # The channels that proposed the hit (``powercontext.search.fusion``).
    matched_by: tuple[str, ...] = ("fts",)


def searchable_text(proposal: Proposal) -> str:
    """What full-text search sees for an Experience: the analyzer's tokens of its four
    fields, in a fixed order. Deterministic, so a rebuild writes the same text."""
    return FamilyIndex.analysed("\n".join(getattr(proposal, name) for name in PROPOSAL_FIELDS))
