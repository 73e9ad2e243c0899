"""The JSON Schemas the MCP tools advertise for their arguments.

They carry the same limits as the HTTP API's input serializers (DESIGN.md §4, "Contract
details"), so an agent sees them before it calls. They are *advertised* only: pydantic
accepts any JSON value for a declared argument (``Any``), and the tool body validates the
arguments with the very DRF serializers the HTTP views use, so limits, messages and field
paths of ``invalid_request`` are the HTTP API's. ``tests/server/mcp/test_schemas.py`` checks these
fragments against the committed OpenAPI document, so the two cannot drift apart.
"""

from typing import Annotated, Any

from pydantic import WithJsonSchema


def _arg(schema: dict[str, Any]) -> Any:
    return Annotated[Any, WithJsonSchema(schema)]


def _string(description: str, *, min_length: int = 1, max_length: int, **extra: Any) -> dict:
    return {
        "type": "string",
        "minLength": min_length,
        "maxLength": max_length,
        "description": description,
        **extra,
    }


SCOPE_ID = _string(
    "The project's scope, e.g. 'git:github.com/acme/widgets' (1..256 characters, not blank).",
    max_length=256,
)
QUERY = _string("What to search for (1..8192 characters, not blank).", max_length=8192)
KIND = _string("What sort of memory this is, e.g. 'decision', 'convention'.", max_length=128)
MEMORY_TEXT = {
    "type": "string",
    "minLength": 1,
    "description": "The memory itself: NFC-normalised and stripped of outer whitespace, "
    "then 1..8192 UTF-8 bytes.",
}
MEMORY_REASON = {
    "type": ["string", "null"],
    "maxLength": 512,
    "description": "Why (optional, at most 512 characters); recorded in the change history.",
}
EXPERIENCE_REASON = {
    "type": ["string", "null"],
    "maxLength": 2000,
    "description": "Why this lesson is worth keeping (optional, at most 2000 characters).",
}
EXPECTED_REVISION = {
    "type": ["integer", "null"],
    "minimum": 0,
    "description": "Only write if the Memory head is still this revision (else revision_conflict).",
}
SEARCH_LIMIT = {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}
SEARCH_MODE = {
    "type": "string",
    "enum": ["auto", "fts", "vector", "hybrid"],
    "default": "auto",
    "description": "'auto' is hybrid once the vector index is ready, else fts; 'vector' "
    "and 'hybrid' answer capability_not_supported while it is not.",
}
LIST_LIMIT = {"type": "integer", "minimum": 1, "maximum": 1000, "default": 1000}
INCLUDE_INACTIVE = {"type": "boolean", "default": False}
CURSOR = {
    "type": ["string", "null"],
    "minLength": 1,
    "maxLength": 512,
    "description": "next_cursor of the previous page (same filters).",
}

ARTIFACT_REF = {
    "type": "object",
    "properties": {
        "family": {"type": "string", "minLength": 1, "maxLength": 32},
        "artifact_id": {"type": "string", "minLength": 1, "maxLength": 64},
        "revision": {"type": "integer", "minimum": 1},
    },
    "required": ["family", "artifact_id", "revision"],
    "additionalProperties": False,
}
SOURCE_REF = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 64},
        "source_id": {"type": "string", "minLength": 1, "maxLength": 256},
    },
    "required": ["name", "source_id"],
    "additionalProperties": False,
}
CITATION = {
    "type": "object",
    "description": "A MemoryCitation exactly as search, list or a Context Pack gave it.",
    "properties": {
        "memory_ref": ARTIFACT_REF,
        "entry_id": {"type": "string", "minLength": 1, "maxLength": 64},
        "entry_version_id": {"type": "string", "minLength": 1, "maxLength": 64},
    },
    "required": ["memory_ref", "entry_id", "entry_version_id"],
    "additionalProperties": False,
}
_PROPOSAL_FIELD = {"type": "string", "minLength": 1, "maxLength": 8000}
PROPOSAL = {
    "type": "object",
    "description": "The lesson learned; each field 1..8000 characters, not blank.",
    "properties": dict.fromkeys(("situation", "action", "outcome", "lesson"), _PROPOSAL_FIELD),
    "required": ["situation", "action", "outcome", "lesson"],
    "additionalProperties": False,
}
SOURCE_REFS = {
    "type": "array",
    "items": SOURCE_REF,
    "maxItems": 32,
    "default": [],
    "description": "Evidence: captured sources. A proposal needs at least one source or "
    "artifact reference.",
}
ARTIFACT_REFS = {
    "type": "array",
    "items": ARTIFACT_REF,
    "maxItems": 32,
    "default": [],
    "description": "Evidence: artifact revisions (e.g. a Memory citation's memory_ref).",
}
TARGET = {
    "anyOf": [ARTIFACT_REF, {"type": "null"}],
    "description": "The current revision of the Experience this proposal would revise.",
}

ScopeId = _arg(SCOPE_ID)
Query = _arg(QUERY)
Kind = _arg(KIND)
MemoryText = _arg(MEMORY_TEXT)
MemoryReason = _arg(MEMORY_REASON)
ExperienceReason = _arg(EXPERIENCE_REASON)
ExpectedRevision = _arg(EXPECTED_REVISION)
SearchLimit = _arg(SEARCH_LIMIT)
SearchMode = _arg(SEARCH_MODE)
ListLimit = _arg(LIST_LIMIT)
IncludeInactive = _arg(INCLUDE_INACTIVE)
Cursor = _arg(CURSOR)
Citation = _arg(CITATION)
ArtifactRef = _arg(ARTIFACT_REF)
Proposal = _arg(PROPOSAL)
SourceRefs = _arg(SOURCE_REFS)
ArtifactRefs = _arg(ARTIFACT_REFS)
Target = _arg(TARGET)
