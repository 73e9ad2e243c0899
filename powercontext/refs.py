"""The references every family and the Context Pack builder exchange: one revision of an
artifact, one captured source. Standard library only, so the pure builder can take them
(``tests/contextpack/test_builder.py`` checks it imports nothing else)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    """One revision of an artifact: ``{family, artifact_id, revision}`` on the wire."""

    family: str
    artifact_id: str
    revision: int

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> ArtifactRef:
        return cls(payload["family"], payload["artifact_id"], payload["revision"])

    def as_payload(self) -> dict[str, Any]:
        return {"family": self.family, "artifact_id": self.artifact_id, "revision": self.revision}


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A captured source: ``{name, source_id}`` on the wire."""

    name: str
    source_id: str

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> SourceRef:
        return cls(payload["name"], payload["source_id"])

    def as_payload(self) -> dict[str, str]:
        return {"name": self.name, "source_id": self.source_id}


def artifact_refs(stored: list[Mapping[str, Any]]) -> tuple[ArtifactRef, ...]:
    return tuple(ArtifactRef.from_payload(ref) for ref in stored)


def source_refs(stored: list[Mapping[str, Any]]) -> tuple[SourceRef, ...]:
    return tuple(SourceRef.from_payload(ref) for ref in stored)
