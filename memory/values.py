"""Plain values the Memory services and selectors exchange with their callers."""

import hashlib
import unicodedata
from dataclasses import dataclass
from typing import Any

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


def memory_ref(revision: int) -> dict[str, Any]:
    return {"family": MEMORY_FAMILY, "artifact_id": MEMORY_ARTIFACT_ID, "revision": revision}


def citation_payload(revision: int, entry_id: str, entry_version_id: str) -> dict[str, Any]:
    return {
        "memory_ref": memory_ref(revision),
        "entry_id": entry_id,
        "entry_version_id": entry_version_id,
    }


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


def scope_token(scope_id: str) -> str:
    """The full-text term that marks a scope's rows (see MemoryActiveEntry.scope_token)."""
    return "s" + hashlib.sha256(scope_id.encode("utf-8")).hexdigest()[:32]
