"""API fuzzing: schemathesis against the committed OpenAPI document, every operation.

Each operation gets positive and negative examples (schemathesis' examples, coverage
and fuzzing phases) sent straight to the WSGI application, and every answer must
conform: no 5xx, a documented status, the documented content type, and a body that
matches the documented schema (error bodies included). A 422 for a limit the schema
cannot express (UTF-8 byte counts) is a documented status, so it conforms.

The fast configuration runs in CI. The full one is one command (docs/fuzzing.md):

    POWERCONTEXT_FUZZ_EXAMPLES=500 .venv/bin/pytest -q -p no:cacheprovider tests/fuzz

Random scopes and ids would only ever reach "not found", so each test first seeds a
small world through the API (memory entries, an approved experience, a pending
candidate), and half of the generated bodies are re-pointed at it: string ids are
replaced by real ones, everything else (revisions, versions, texts, wrong types) stays
as generated. Each operation's test runs in its own rolled-back transaction.
"""

import json
import os
import zlib
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from django.test import Client
from django.test.client import ClientHandler
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.specs.openapi import checks as openapi_checks

from experience import services as experience_services
from tests.conftest import ApiClient

OPENAPI = Path(__file__).resolve().parents[2] / "openapi" / "powercontext.yaml"
EXAMPLES = int(os.environ.get("POWERCONTEXT_FUZZ_EXAMPLES", "25"))
AGENT_TOKEN = "fuzz-agent-token"
SCOPE = "fuzz-scope"
REVIEWER_OPERATIONS = {
    "approve_artifact_candidate",
    "reject_artifact_candidate",
    "revise_artifact_candidate",
}
CHECKS = [
    schemathesis.checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
]

schema = schemathesis.openapi.from_path(OPENAPI)
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=EXAMPLES,
    # Same examples on every run: CI must not be flaky. A new finding comes from raising
    # POWERCONTEXT_FUZZ_EXAMPLES, and is then kept as a regression test.
    deterministic=True,
)

# The seeded world of the running test, read by the body strategy below.
WORLD: dict[str, Any] = {}


def wsgi_app():
    """The Django application as a WSGI callable, through Django's test handler so that
    requests share the test's connection and transaction (as the test client does)."""
    handler = ClientHandler(enforce_csrf_checks=False)

    def app(environ, start_response):
        response = handler(environ)
        start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
        return [response.content]

    return app


def seed_world(reviewer_token: str) -> dict[str, Any]:
    agent = ApiClient(Client(), token=AGENT_TOKEN)
    reviewer = ApiClient(Client(), token=reviewer_token)
    first = agent.ok("/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": "alpha"})
    second = agent.ok("/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": "beta"})
    agent.ok(
        "/v1/memory/entries/retire", {"scope_id": SCOPE, "citation": first["entry"]["citation"]}
    )
    agent.ok(
        "/v1/sources/content", {"scope_id": SCOPE, "source_id": "prompt-1", "content": "x"}, 202
    )
    proposal = {"situation": "s", "action": "a", "outcome": "o", "lesson": "alpha beta"}
    source_refs = [{"name": "content", "source_id": "prompt-1"}]
    body = {"scope_id": SCOPE, "proposal": proposal, "source_refs": source_refs}
    approved = agent.ok("/v1/experience/propose", body, 201)
    approved = reviewer.ok(
        "/v1/artifact-candidates/approve",
        {"scope_id": SCOPE, "candidate_id": approved["candidate_id"], "expected_version": 1},
    )
    pending = agent.ok("/v1/experience/propose", body, 201)
    return {
        "citations": [first["entry"]["citation"], second["entry"]["citation"]],
        "experience": approved["result_artifact"],
        "candidate_id": pending["candidate_id"],
    }


def _pick(options: list, generated: Any) -> Any:
    # Deterministic, so that replaying an example sends the same body.
    return options[zlib.crc32(json.dumps(generated, default=str).encode()) % len(options)]


def anchored(body: Any, *, numbers: bool) -> Any:
    """``body`` with its string ids replaced by ids of the seeded world (and, with
    ``numbers``, its integer revisions and versions by real ones)."""
    if not isinstance(body, dict) or not WORLD:
        return body
    body = json.loads(json.dumps(body))
    _replace(body, "scope_id", SCOPE, str)
    _replace(body, "candidate_id", WORLD["candidate_id"], str)
    if numbers:
        _replace(body, "expected_version", 1, int)
    citation = body.get("citation")
    if isinstance(citation, dict):
        real = _pick(WORLD["citations"], citation)
        for key in ("entry_id", "entry_version_id"):
            _replace(citation, key, real[key], str)
        _anchor_ref(citation.get("memory_ref"), real["memory_ref"], numbers)
    for key in ("artifact", "target"):
        _anchor_ref(body.get(key), WORLD["experience"], numbers)
    return body


def _replace(container: dict, key: str, value: Any, kind: type) -> None:
    # Only values of the right JSON type: a negative example's wrong type stays wrong.
    current = container.get(key)
    if isinstance(current, kind) and not isinstance(current, bool):
        container[key] = value


def _anchor_ref(ref: Any, real: dict[str, Any], numbers: bool) -> None:
    if isinstance(ref, dict):
        for key in ("family", "artifact_id"):
            _replace(ref, key, real[key], str)
        if numbers:
            _replace(ref, "revision", real["revision"], int)


def flatmap_body(context, body):
    return st.sampled_from([body, anchored(body, numbers=False), anchored(body, numbers=True)])


@pytest.fixture
def world(db, settings):
    settings.POWERCONTEXT_API_TOKEN = AGENT_TOKEN
    reviewer_token = experience_services.reviewer_token_issue(username="fuzz", create=True).token
    WORLD.update(seed_world(reviewer_token))
    yield {"agent": AGENT_TOKEN, "reviewer": reviewer_token}
    WORLD.clear()


@schema.hooks.apply(flatmap_body)
@schema.parametrize()
@settings(
    deadline=None,
    # The fixture is the seeded world every example of one operation shares, on purpose.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_operation_answers_as_documented(case, world):
    operation_id = case.operation.definition.raw.get("operationId")
    token = world["reviewer" if operation_id in REVIEWER_OPERATIONS else "agent"]
    case.call_and_validate(
        app=wsgi_app(), headers={"Authorization": f"Bearer {token}"}, checks=CHECKS
    )
