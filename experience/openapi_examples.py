"""Examples of the Experience and candidate operations for the OpenAPI document: a
lesson proposed with a captured prompt as evidence, sharpened by a reviewer, approved;
a duplicate rejected (see ``powercontext.api.openapi_examples``)."""

from powercontext.api.openapi_examples import (
    CANDIDATE_ID,
    OTHER_CANDIDATE_ID,
    SCOPE,
    SOURCE_ID,
    error,
    experience_ref,
    invalid,
    request,
    response,
)

PROPOSAL = {
    "situation": "A schema change broke the nightly import.",
    "action": "We added a migration test for the importer.",
    "outcome": "The next schema change was caught in CI.",
    "lesson": "Run the migration tests after changing persistence.",
}
REVISED_PROPOSAL = {
    **PROPOSAL,
    "lesson": "Run `make migrate-test` after changing a model or a migration.",
}
SOURCE_REFS = [{"name": "content", "source_id": SOURCE_ID}]
PROPOSE_REASON = "Came up twice this week."
REVISE_REASON = "Sharper lesson."
REJECT_REASON = "Already covered by the approved lesson."


def candidate(candidate_id=CANDIDATE_ID, **changes) -> dict:
    payload = {
        "candidate_id": candidate_id,
        "version": 1,
        "family": "experience",
        "status": "pending",
        "proposal": PROPOSAL,
        "source_refs": SOURCE_REFS,
        "artifact_refs": [],
        "target": None,
        "reason": PROPOSE_REASON,
        "result_artifact": None,
        "decision_reason": None,
    }
    payload.update(changes)
    return payload


PROPOSE_REQUEST = request(
    "A prompt as evidence",
    {
        "scope_id": SCOPE,
        "proposal": PROPOSAL,
        "source_refs": SOURCE_REFS,
        "reason": PROPOSE_REASON,
    },
    "`prompt-42` was captured first with `POST /v1/sources/content`; `artifact_refs` may "
    "be left out because `source_refs` is not empty.",
)
PROPOSE_RESPONSE = response(
    "Pending candidate",
    candidate(),
    "Waits for a reviewer on the desk (`/review/`); not in search or packs until approved.",
)
PROPOSE_UNKNOWN_SOURCE = invalid(
    "Evidence never captured",
    (
        "source_refs.0",
        "No source with this name and source_id was captured in this scope (capture it "
        "first: POST /v1/sources/content).",
    ),
    description="Each source reference must name a source captured in this scope.",
)

GET_REQUEST = request("An approved revision", {"scope_id": SCOPE, "artifact": experience_ref(1)})
GET_RESPONSE = response(
    "The lesson",
    {
        "artifact": experience_ref(1),
        "content": REVISED_PROPOSAL,
        "source_refs": SOURCE_REFS,
        "artifact_refs": [],
    },
)
GET_NOT_FOUND = error(
    "No such revision",
    "artifact_not_found",
    "Artifact or revision not found.",
    description="Never approved, another scope, or a revision that does not exist.",
)

LIST_REQUEST = request("Pending, first page", {"scope_id": SCOPE, "status": "pending", "limit": 10})
LIST_RESPONSE = response(
    "One pending candidate",
    {"candidates": [candidate()], "next_cursor": None},
    "`next_cursor: null`: this was the last page.",
)

CANDIDATE_GET_REQUEST = request(
    "Still at version 1?",
    {"scope_id": SCOPE, "candidate_id": CANDIDATE_ID, "expected_version": 1},
)
CANDIDATE_GET_RESPONSE = response("Current version", candidate())
CANDIDATE_CONFLICT = error(
    "Stale version",
    "candidate_conflict",
    "The candidate has a newer version; re-read it and retry.",
    description="Someone revised the candidate since you read it.",
)

REVISE_REQUEST = request(
    "Sharpen the lesson",
    {
        "scope_id": SCOPE,
        "candidate_id": CANDIDATE_ID,
        "expected_version": 1,
        "proposal": REVISED_PROPOSAL,
        "reason": REVISE_REASON,
    },
    "Refs left out keep version 1's evidence.",
)
REVISE_RESPONSE = response(
    "Version 2, still pending",
    candidate(version=2, proposal=REVISED_PROPOSAL, reason=REVISE_REASON),
)

APPROVE_REQUEST = request(
    "Approve version 2",
    {"scope_id": SCOPE, "candidate_id": CANDIDATE_ID, "expected_version": 2},
    "Sent with a reviewer's personal token.",
)
APPROVE_RESPONSE = response(
    "Approved",
    candidate(
        version=2,
        status="approved",
        proposal=REVISED_PROPOSAL,
        reason=REVISE_REASON,
        result_artifact=experience_ref(1),
    ),
    "`result_artifact` names the new Experience revision: search and packs now find it.",
)
CANDIDATE_TERMINAL = error(
    "Already decided",
    "candidate_terminal",
    "The candidate has already been decided.",
    description="Approved or rejected candidates cannot be decided again.",
)

REJECT_REQUEST = request(
    "A duplicate",
    {
        "scope_id": SCOPE,
        "candidate_id": OTHER_CANDIDATE_ID,
        "expected_version": 1,
        "reason": REJECT_REASON,
    },
    "Sent with a reviewer's personal token.",
)
REJECT_RESPONSE = response(
    "Rejected",
    candidate(
        OTHER_CANDIDATE_ID,
        status="rejected",
        reason=None,
        decision_reason=REJECT_REASON,
    ),
)
