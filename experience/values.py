"""Plain values of the Experience family and the pure rules on them (no database)."""

import uuid
from dataclasses import dataclass
from typing import Any

from powercontext import analyzer
from powercontext.exceptions import InvalidRequest

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


@dataclass(frozen=True)
class ArtifactRef:
    family: str
    artifact_id: str
    revision: int

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> "ArtifactRef":
        return cls(payload["family"], payload["artifact_id"], payload["revision"])

    def as_payload(self) -> dict[str, Any]:
        return {"family": self.family, "artifact_id": self.artifact_id, "revision": self.revision}


def experience_ref(artifact_id: str, revision: int) -> dict[str, Any]:
    return ArtifactRef(EXPERIENCE_FAMILY, artifact_id, revision).as_payload()


def searchable_text(proposal: Proposal) -> str:
    """What full-text search sees for an Experience: the analyzer's tokens of its four
    fields, in a fixed order. Deterministic, so a rebuild writes the same text."""
    return analyzer.searchable_text("\n".join(getattr(proposal, name) for name in PROPOSAL_FIELDS))
