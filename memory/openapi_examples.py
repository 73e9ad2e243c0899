"""Examples of the Memory operations for the OpenAPI document: one entry remembered,
found, revised, retired and reactivated (see ``powercontext.api.openapi_examples``)."""

from powercontext.api.openapi_examples import (
    ENTRY_ID,
    ENTRY_VERSION_1,
    ENTRY_VERSION_2,
    SCOPE,
    citation,
    error,
    invalid,
    memory_ref,
    request,
    response,
)

TEXT_1 = (
    "Run `make migrate-test` after changing a model: the nightly importer reads the live schema."
)
TEXT_2 = "Run `make migrate-test` after changing a model or a migration."
REASON_1 = "Learned from the broken nightly import."
REASON_2 = "Migrations break it too."
RETIRE_REASON = "Superseded by the CI check."
REACTIVATE_REASON = "The CI check was removed."


def entry(revision: int, version_id: str, version: int, text: str, state="active") -> dict:
    return {
        "citation": citation(revision, version_id),
        "version": version,
        "kind": "convention",
        "text": text,
        "state": state,
        "source_refs": [],
        "artifact_refs": [],
    }


def write(revision: int, entry_payload: dict | None) -> dict:
    return {"memory": memory_ref(revision), "entry": entry_payload}


REMEMBER_REQUEST = request(
    "A convention",
    {"scope_id": SCOPE, "kind": "convention", "text": TEXT_1, "reason": REASON_1},
    "`kind` is free text (`convention`, `decision`, `note`...); `reason` is kept in the "
    "change history (`POST /v1/memory/changes`).",
)
REMEMBER_RESPONSE = response(
    "Remembered",
    write(1, entry(1, ENTRY_VERSION_1, 1, TEXT_1)),
    "The scope's Memory moved to revision 1; `entry.citation` names this exact version: "
    "keep it to get, revise or retire the entry.",
)
REMEMBER_NOOP = response(
    "Already remembered",
    write(1, None),
    "The same kind and text is already active: no new revision (`entry: null`).",
)
REMEMBER_INVALID = invalid(
    "Blank kind and text",
    ("kind", "This field may not be blank."),
    ("text", "Must not be empty after trimming whitespace."),
    description="Every bad field is named by its path in `details.errors`.",
)
REMEMBER_CONFLICT = error(
    "Stale expected_revision",
    "revision_conflict",
    "expected_revision is not the current head.",
    description="With `expected_revision`, the write happens only if the scope's Memory is "
    "still at that revision: another writer got there first; re-read and retry.",
)

SEARCH_REQUEST = request(
    "Words of a prompt", {"scope_id": SCOPE, "query": "importer schema", "limit": 5}
)
SEARCH_RESPONSE = response(
    "One hit",
    {
        "memory": memory_ref(1),
        "mode": "hybrid",
        "hits": [
            {
                "citation": citation(1, ENTRY_VERSION_1),
                "text": TEXT_1,
                "score": 1.0,
                "matched_by": ["fts", "vector"],
            }
        ],
    },
    "Best first; `score` is relative to the best hit (0..1); `mode` says which ran "
    "(`auto` is `hybrid` once the vector index is ready) and `matched_by` which channels "
    "found the hit.",
)
SEARCH_UNSUPPORTED = error(
    "Vector search, channel off",
    "capability_not_supported",
    "Search mode 'vector' needs the vector index, which is not ready: "
    "switched off (POWERCONTEXT_EMBEDDINGS=off).",
    description="`GET /v1/capabilities` lists the modes this server offers; "
    "`/health/ready` says why a vector index is not ready.",
)

LIST_REQUEST = request("Active entries", {"scope_id": SCOPE, "limit": 100})
LIST_RESPONSE = response(
    "One page",
    {
        "memory": memory_ref(1),
        "entries": [entry(1, ENTRY_VERSION_1, 1, TEXT_1)],
        "next_cursor": None,
    },
    "`next_cursor: null`: this was the last page.",
)

GET_REQUEST = request(
    "By citation",
    {"scope_id": SCOPE, "citation": citation(1, ENTRY_VERSION_1)},
    "The citation from a remember, search or Context Pack answer.",
)
GET_RESPONSE = response("The cited version", entry(1, ENTRY_VERSION_1, 1, TEXT_1))
GET_NOT_FOUND = error(
    "No such version",
    "memory_not_found",
    "Memory entry version not found.",
    description="The revision exists but does not hold this entry version.",
)

REVISE_REQUEST = request(
    "New text",
    {
        "scope_id": SCOPE,
        "citation": citation(1, ENTRY_VERSION_1),
        "kind": "convention",
        "text": TEXT_2,
        "reason": REASON_2,
    },
    "Cite the version you read: revising is refused if the entry changed since.",
)
REVISE_RESPONSE = response(
    "Revised",
    write(2, entry(2, ENTRY_VERSION_2, 2, TEXT_2)),
    "Same `entry_id`, a new `entry_version_id` and `version`, at Memory revision 2.",
)
STALE_CITATION = error(
    "Superseded citation",
    "revision_conflict",
    "The citation names a superseded version of this entry.",
    description="The entry was revised since this citation: get the current one (search or "
    "list) and retry.",
)

ENTRY_INACTIVE = error(
    "Already retired",
    "memory_entry_inactive",
    "The memory entry is retired.",
    description="Only an active entry can be revised or retired: reactivate it first.",
)

RETIRE_REQUEST = request(
    "Retire",
    {"scope_id": SCOPE, "citation": citation(2, ENTRY_VERSION_2), "reason": RETIRE_REASON},
)
RETIRE_RESPONSE = response(
    "Retired",
    write(3, entry(3, ENTRY_VERSION_2, 2, TEXT_2, state="inactive")),
    "The entry leaves search and Context Packs; its versions stay citable.",
)
REACTIVATE_REQUEST = request(
    "Reactivate",
    {"scope_id": SCOPE, "citation": citation(3, ENTRY_VERSION_2), "reason": REACTIVATE_REASON},
)
REACTIVATE_RESPONSE = response("Active again", write(4, entry(4, ENTRY_VERSION_2, 2, TEXT_2)))

CHANGES_REQUEST = request("From the start", {"scope_id": SCOPE, "since_revision": 0, "limit": 2})
CHANGES_RESPONSE = response(
    "First two revisions",
    {
        "memory": memory_ref(4),
        "revisions": [
            {
                "memory_ref": memory_ref(1),
                "changes": [
                    {
                        "op": "add",
                        "entry_id": ENTRY_ID,
                        "from_entry_version_id": None,
                        "to_entry_version_id": ENTRY_VERSION_1,
                        "reason": REASON_1,
                    }
                ],
            },
            {
                "memory_ref": memory_ref(2),
                "changes": [
                    {
                        "op": "revise",
                        "entry_id": ENTRY_ID,
                        "from_entry_version_id": ENTRY_VERSION_1,
                        "to_entry_version_id": ENTRY_VERSION_2,
                        "reason": REASON_2,
                    }
                ],
            },
        ],
        "next_since": 2,
    },
    "The head is at 4; ask again with `since_revision: 2` for the rest "
    "(`next_since: null` once caught up).",
)
