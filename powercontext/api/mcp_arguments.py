"""The JSON Schemas the MCP tools advertise for their arguments: the shared pieces.

They carry the same limits as the HTTP API's input serializers (DESIGN.md §4, "Contract
details"), so an agent sees them before it calls. They are *advertised* only: pydantic
accepts any JSON value for a declared argument (``Any``), and the tool validates the
arguments with the very DRF serializers the HTTP views use, so limits, messages and field
paths of ``invalid_request`` are the HTTP API's. A family declares its own arguments
beside its tools (``memory/mcp.py``, ``experience/mcp.py``);
``tests/server/mcp/test_tools.py`` checks every tool's against the committed OpenAPI
document, so the two cannot drift apart.
"""

from typing import Annotated, Any

from pydantic import WithJsonSchema


def argument(schema: dict[str, Any]) -> Any:
    """A tool argument advertised with ``schema`` (and accepting any JSON value)."""
    return Annotated[Any, WithJsonSchema(schema)]


def string(description: str, *, min_length: int = 1, max_length: int, **extra: Any) -> dict:
    return {
        "type": "string",
        "minLength": min_length,
        "maxLength": max_length,
        "description": description,
        **extra,
    }


SCOPE_ID = string(
    "The project's scope, e.g. 'git:github.com/acme/widgets' (1..256 characters, not blank).",
    max_length=256,
)
LIST_LIMIT = {"type": "integer", "minimum": 1, "maximum": 1000, "default": 1000}
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

ScopeId = argument(SCOPE_ID)
ListLimit = argument(LIST_LIMIT)
Cursor = argument(CURSOR)
ArtifactRef = argument(ARTIFACT_REF)
