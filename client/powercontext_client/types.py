"""The API's request and response shapes (DESIGN.md §4) as TypedDicts.

They are plain dicts at run time: the client returns the server's JSON as is, and these
types tell an editor and a type checker what is in it.
"""

from typing import Any, Literal, TypedDict

# -- shared shapes ---------------------------------------------------------------------


class ArtifactRef(TypedDict):
    family: str
    artifact_id: str
    revision: int


class SourceReference(TypedDict):
    name: str
    source_id: str


class MemoryCitation(TypedDict):
    memory_ref: ArtifactRef
    entry_id: str
    entry_version_id: str


class MemoryEntry(TypedDict):
    citation: MemoryCitation
    version: int
    kind: str
    text: str
    state: Literal["active", "inactive"]
    source_refs: list[SourceReference]
    artifact_refs: list[ArtifactRef]


# -- system ------------------------------------------------------------------------------


class HealthCheck(TypedDict, total=False):
    status: Literal["ok", "failing"]
    detail: str


class Health(TypedDict):
    status: Literal["live", "ready", "degraded", "not_ready"]
    checks: dict[str, HealthCheck]


class Capabilities(TypedDict):
    source_types: list[str]
    artifact_families: list[str]
    search_modes: list[str]
    context_versions: list[str]
    memory_extraction: bool
    experience_generation: bool


class SourceCaptured(TypedDict):
    status: Literal["accepted"]
    source: SourceReference
    position: int


class PreparedContext(TypedDict):
    schema: str
    status: Literal["ready", "empty"]
    content: str | None
    content_bytes: int


# -- memory ------------------------------------------------------------------------------


class MemoryWrite(TypedDict):
    """``entry`` is None when the write changed nothing (an identical remember)."""

    memory: ArtifactRef
    entry: MemoryEntry | None


class MemorySearchHit(TypedDict):
    citation: MemoryCitation
    text: str
    score: float
    matched_by: list[str]


class MemorySearch(TypedDict):
    memory: ArtifactRef | None
    mode: Literal["fts"] | None
    hits: list[MemorySearchHit]


class MemoryEntries(TypedDict):
    memory: ArtifactRef | None
    entries: list[MemoryEntry]
    next_cursor: str | None


class MemoryChange(TypedDict):
    op: Literal["add", "revise", "deactivate", "reactivate"]
    entry_id: str
    from_entry_version_id: str | None
    to_entry_version_id: str | None
    reason: str | None


class MemoryRevision(TypedDict):
    memory_ref: ArtifactRef
    changes: list[MemoryChange]


class MemoryChanges(TypedDict):
    memory: ArtifactRef | None
    revisions: list[MemoryRevision]
    next_since: int | None


# -- experience ----------------------------------------------------------------------------


class ExperienceProposal(TypedDict):
    situation: str
    action: str
    outcome: str
    lesson: str


class Experience(TypedDict):
    artifact: ArtifactRef
    content: ExperienceProposal
    source_refs: list[SourceReference]
    artifact_refs: list[ArtifactRef]


class ArtifactCandidate(TypedDict):
    candidate_id: str
    version: int
    family: str
    status: Literal["pending", "approved", "rejected"]
    proposal: ExperienceProposal
    source_refs: list[SourceReference]
    artifact_refs: list[ArtifactRef]
    target: ArtifactRef | None
    reason: str | None
    result_artifact: ArtifactRef | None
    decision_reason: str | None


class ArtifactCandidates(TypedDict):
    candidates: list[ArtifactCandidate]
    next_cursor: str | None


JSONObject = dict[str, Any]
