"""Plain values the Memory services and selectors exchange with their callers."""

import hashlib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from powercontext.refs import ArtifactRef, SourceRef

MEMORY_FAMILY = "memory"
MEMORY_ARTIFACT_ID = "memory"

# A change's op as stored in a revision's (hash-chained, immutable) change list, and its
# name in the public ChangeOp enum. Retiring was stored as "retire" from the start; the
# stored content is never rewritten (that would break the hash chain), so the name is
# mapped where changes leave the server.
CHANGE_OP_WIRE = {
    "add": "add",
    "revise": "revise",
    "retire": "deactivate",
    "reactivate": "reactivate",
}


@dataclass(frozen=True)
class Citation:
    """An exact entry version in one Memory revision."""

    revision: int
    entry_id: str
    entry_version_id: str
    family: str = MEMORY_FAMILY
    artifact_id: str = MEMORY_ARTIFACT_ID

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> "Citation":
        ref = payload["memory_ref"]
        return cls(
            revision=ref["revision"],
            entry_id=payload["entry_id"],
            entry_version_id=payload["entry_version_id"],
            family=ref["family"],
            artifact_id=ref["artifact_id"],
        )

    @property
    def memory_ref(self) -> ArtifactRef:
        return ArtifactRef(self.family, self.artifact_id, self.revision)


def memory_ref(revision: int) -> ArtifactRef:
    return ArtifactRef(MEMORY_FAMILY, MEMORY_ARTIFACT_ID, revision)


@dataclass(frozen=True)
class MemoryEntry:
    """One entry version and its state (``active``, ``inactive``) in the cited revision."""

    citation: Citation
    version: int
    kind: str
    text: str
    state: str
    source_refs: tuple[SourceRef, ...]
    artifact_refs: tuple[ArtifactRef, ...]


@dataclass(frozen=True)
class MemoryEntryPage:
    """One page of entries at one revision (``memory`` is None for an empty scope)."""

    memory: ArtifactRef | None
    entries: list[MemoryEntry]
    next_cursor: str | None


@dataclass(frozen=True)
class MemoryChange:
    """One change of a revision, by its public op name (``CHANGE_OP_WIRE``)."""

    op: str
    entry_id: str
    from_entry_version_id: str | None
    to_entry_version_id: str | None
    reason: str | None


@dataclass(frozen=True)
class MemoryRevision:
    memory_ref: ArtifactRef
    changes: list[MemoryChange]


@dataclass(frozen=True)
class MemoryChanges:
    """Revisions after a point, oldest first; ``next_since`` continues (None: caught up)."""

    memory: ArtifactRef | None
    revisions: list[MemoryRevision]
    next_since: int | None


@dataclass(frozen=True)
class MemoryFound:
    """One search hit: the cited version and its score relative to the best hit (1.0)."""

    citation: Citation
    text: str
    score: float
    matched_by: tuple[str, ...]


@dataclass(frozen=True)
class MemorySearchResult:
    """The head searched (None for an empty scope), the mode used and the hits."""

    memory: ArtifactRef | None
    mode: str | None
    hits: list[MemoryFound]


@dataclass(frozen=True)
class WriteResult:
    """``memory`` is the head after the call; ``entry`` is None for a no-op;
    ``redacted`` counts the secrets replaced by markers in what was written, by kind."""

    memory: ArtifactRef
    entry: MemoryEntry | None
    redacted: Mapping[str, int] = field(default_factory=dict)


def normalize_text(text: str) -> str:
    """Memory text as stored: NFC, outer whitespace stripped, inner bytes kept exactly."""
    return unicodedata.normalize("NFC", text).strip()


def normalize_kind(kind: str) -> str:
    return unicodedata.normalize("NFC", kind)


def kind_text_hash(kind: str, text: str) -> str:
    """Identity of "the same memory" for the remember decision table."""
    digest = hashlib.sha256()
    for part in (kind, text):
        encoded = part.encode("utf-8")
        # Length-prefixed so ("ab", "c") and ("a", "bc") differ.
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
    return digest.hexdigest()
