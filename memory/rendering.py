"""The Memory results as response bodies: one function per type, used by the HTTP views
and the MCP tools alike. The shapes are the output serializers' (``memory.serializers``,
from which the OpenAPI document is generated); every response of the test suite is
checked against that document (``tests/openapi_contract.py``). Plain functions rather than
the serializers themselves: rendering a 1000-entry page through DRF took about 60 ms,
these take about 5."""

from typing import Any

from memory.values import (
    Citation,
    MemoryChanges,
    MemoryEntry,
    MemoryEntryPage,
    MemorySearchResult,
    WriteResult,
)
from powercontext.refs import ArtifactRef


def _ref(ref: ArtifactRef | None) -> dict[str, Any] | None:
    return None if ref is None else ref.as_payload()


def citation(value: Citation) -> dict[str, Any]:
    return {
        "memory_ref": value.memory_ref.as_payload(),
        "entry_id": value.entry_id,
        "entry_version_id": value.entry_version_id,
    }


def entry(value: MemoryEntry) -> dict[str, Any]:
    return {
        "citation": citation(value.citation),
        "version": value.version,
        "kind": value.kind,
        "text": value.text,
        "state": value.state,
        "source_refs": [ref.as_payload() for ref in value.source_refs],
        "artifact_refs": [ref.as_payload() for ref in value.artifact_refs],
    }


def write_result(value: WriteResult) -> dict[str, Any]:
    return {
        "memory": value.memory.as_payload(),
        "entry": None if value.entry is None else entry(value.entry),
    }


def search_result(value: MemorySearchResult) -> dict[str, Any]:
    return {
        "memory": _ref(value.memory),
        "mode": value.mode,
        "hits": [
            {
                "citation": citation(hit.citation),
                "text": hit.text,
                "score": hit.score,
                "matched_by": list(hit.matched_by),
            }
            for hit in value.hits
        ],
    }


def entry_page(value: MemoryEntryPage) -> dict[str, Any]:
    return {
        "memory": _ref(value.memory),
        "entries": [entry(item) for item in value.entries],
        "next_cursor": value.next_cursor,
    }


def changes(value: MemoryChanges) -> dict[str, Any]:
    return {
        "memory": _ref(value.memory),
        "revisions": [
            {
                "memory_ref": revision.memory_ref.as_payload(),
                "changes": [
                    {
                        "op": change.op,
                        "entry_id": change.entry_id,
                        "from_entry_version_id": change.from_entry_version_id,
                        "to_entry_version_id": change.to_entry_version_id,
                        "reason": change.reason,
                    }
                    for change in revision.changes
                ],
            }
            for revision in value.revisions
        ],
        "next_since": value.next_since,
    }
