"""The Experience results as response bodies: one function per type, used by the HTTP
views and the MCP tools alike, in the shapes of ``experience.serializers`` (the OpenAPI
document's; ``tests/openapi_contract.py`` checks every response of the test suite)."""

from typing import Any

from experience.values import ApprovedExperience, ArtifactCandidate, CandidatePage


def candidate(value: ArtifactCandidate) -> dict[str, Any]:
    return {
        "candidate_id": value.candidate_id,
        "version": value.version,
        "family": value.family,
        "status": value.status,
        "proposal": value.proposal.as_payload(),
        "source_refs": [ref.as_payload() for ref in value.source_refs],
        "artifact_refs": [ref.as_payload() for ref in value.artifact_refs],
        "target": None if value.target is None else value.target.as_payload(),
        "reason": value.reason,
        "result_artifact": (
            None if value.result_artifact is None else value.result_artifact.as_payload()
        ),
        "decision_reason": value.decision_reason,
    }


def candidate_page(value: CandidatePage) -> dict[str, Any]:
    return {
        "candidates": [candidate(item) for item in value.candidates],
        "next_cursor": value.next_cursor,
    }


def approved_experience(value: ApprovedExperience) -> dict[str, Any]:
    return {
        "artifact": value.artifact.as_payload(),
        "content": value.content.as_payload(),
        "source_refs": [ref.as_payload() for ref in value.source_refs],
        "artifact_refs": [ref.as_payload() for ref in value.artifact_refs],
    }
