"""The routes, callers and example calls of the role tests (``test_roles.py``, the MCP
tools' and the real server's): a small world of one scope, and for every operation a
call that succeeds for a caller whose role allows it."""

from pathlib import Path

import yaml
from django.contrib.auth import get_user_model

from experience import services as experience_services
from experience.models import Candidate, CandidateVersion
from experience.values import Proposal
from memory import rendering as memory_rendering
from memory import services as memory_services
from powercontext.api.auth import Role
from powercontext.models import ArtifactRevision, SourceRecord
from powercontext.sources import source_capture

OPENAPI = Path(__file__).resolve().parents[3] / "openapi" / "powercontext.yaml"
SCOPE = "git:example.com/acme/roles"
AGENT_TOKEN = "agent-token-for-the-role-tests"
PROPOSAL = {
    "situation": "The nightly import broke after a schema change.",
    "action": "We added a migration test for the importer.",
    "outcome": "The next schema change was caught in CI.",
    "lesson": "Test migrations with the importer.",
}
SOURCE = {"name": "content", "source_id": "prompt-1"}
# The role each operation needs, as the tests expect it: each view declares its own
# (``role = Role.WRITE``) and the MCP tools take their view's; this table is what they are
# held to, so a view that changed its role fails here.
OPERATION_ROLES: dict[str, Role] = {
    "capabilities": Role.READ,
    "metrics": Role.READ,
    "capture_content_source": Role.WRITE,
    "remember_memory": Role.WRITE,
    "search_memory": Role.READ,
    "list_memory_entries": Role.READ,
    "get_memory_entry": Role.READ,
    "revise_memory_entry": Role.WRITE,
    "retire_memory_entry": Role.WRITE,
    "reactivate_memory_entry": Role.WRITE,
    "memory_changes": Role.READ,
    "prepare_context": Role.READ,
    "session_context": Role.READ,
    "propose_experience": Role.WRITE,
    "get_experience": Role.READ,
    "list_artifact_candidates": Role.READ,
    "get_artifact_candidate": Role.READ,
    "approve_artifact_candidate": Role.DECIDE,
    "reject_artifact_candidate": Role.DECIDE,
    "revise_artifact_candidate": Role.DECIDE,
}
# Routes outside the OpenAPI document (their body is not JSON), with their method.
UNDOCUMENTED = {"/metrics": ("get", "metrics")}


def documented_routes() -> list[tuple[str, str, str]]:
    """(path, method, operation id) of every operation in the committed OpenAPI document,
    plus the undocumented ``/metrics``."""
    document = yaml.safe_load(OPENAPI.read_text())
    routes = [
        (path, method, operation["operationId"])
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if path.startswith("/v1/")
    ]
    return routes + [(path, *rest) for path, rest in UNDOCUMENTED.items()]


def world() -> dict:
    """One scope with a Memory entry, a captured prompt, an approved Experience and a
    pending candidate; written through the services, as the agent and a superuser."""
    decider = get_user_model().objects.create_superuser("world-reviewer", password=None)
    entry = memory_services.memory_remember(
        scope_id=SCOPE, kind="note", text="Deploys go through the staging pipeline."
    ).entry
    source_capture(scope_id=SCOPE, source_id=SOURCE["source_id"], content="a prompt")

    def propose(lesson):
        return experience_services.experience_propose(
            scope_id=SCOPE,
            proposal=Proposal.from_payload({**PROPOSAL, "lesson": lesson}),
            source_refs=[SOURCE],
            artifact_refs=[],
        )

    approved = experience_services.candidate_approve(
        scope_id=SCOPE,
        candidate_id=propose("An approved lesson.").candidate_id,
        expected_version=1,
        reviewer=decider,
    )
    return {
        "citation": memory_rendering.citation(entry.citation),
        "experience": approved.result_artifact.as_payload(),
        "candidate_id": propose("A pending lesson.").candidate_id,
    }


def body(operation: str, w: dict) -> dict | None:
    """A call of ``operation`` that succeeds in ``w`` (None for a GET). A new operation
    must be added here: the role tests fail on a KeyError until it is."""
    scope = {"scope_id": SCOPE}
    pending = {**scope, "candidate_id": w["candidate_id"], "expected_version": 1}
    return {
        "capabilities": None,
        "metrics": None,
        "capture_content_source": {**scope, "source_id": "prompt-2", "content": "another"},
        "remember_memory": {**scope, "kind": "note", "text": "A new fact."},
        "search_memory": {**scope, "query": "staging pipeline"},
        "list_memory_entries": scope,
        "get_memory_entry": {**scope, "citation": w["citation"]},
        "revise_memory_entry": {
            **scope,
            "citation": w["citation"],
            "kind": "note",
            "text": "Deploys go through the canary pipeline.",
        },
        "retire_memory_entry": {**scope, "citation": w["citation"]},
        # Reactivating an active entry is a no-op: still a write the agent alone may ask.
        "reactivate_memory_entry": {**scope, "citation": w["citation"]},
        "memory_changes": {**scope, "since_revision": 0},
        "prepare_context": {**scope, "query": "how do deploys work"},
        "session_context": scope,
        "propose_experience": {**scope, "proposal": PROPOSAL, "source_refs": [SOURCE]},
        "get_experience": {**scope, "artifact": w["experience"]},
        "list_artifact_candidates": scope,
        "get_artifact_candidate": {**scope, "candidate_id": w["candidate_id"]},
        "approve_artifact_candidate": pending,
        "reject_artifact_candidate": {**pending, "reason": "Not a lesson."},
        "revise_artifact_candidate": {**pending, "proposal": PROPOSAL},
    }[operation]


def fingerprint() -> tuple:
    """What a write would change: revisions, sources, candidates and their versions."""
    return (
        ArtifactRevision.objects.count(),
        SourceRecord.objects.count(),
        CandidateVersion.objects.count(),
        sorted(Candidate.objects.values_list("candidate_id", "status", "version")),
    )
