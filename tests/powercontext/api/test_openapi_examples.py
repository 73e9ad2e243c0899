"""The OpenAPI document teaches, and what it teaches is true.

- Every operation says what it does, has a request example (when it takes a body) and a
  success example, and every schema has its own description (not the one inherited from
  ``StrictSerializer``).
- Every example validates against its schema in the committed document.
- The examples are one story (``powercontext.api.openapi_examples``): it is replayed
  against the API in order, each example request sent (its ids replaced by the ones the
  server minted earlier in the story) and each answer compared with the example answer:
  the same keys, types and values, ids of the same shape. Every example of the document
  is replayed, except those listed in ``NOT_REPLAYED``.
"""

import copy
import importlib
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from django.test import Client

from experience import services as experience_services
from powercontext.api.fields import StrictSerializer
from powercontext.api.openapi_examples import ID_PATTERNS
from tests.conftest import ApiClient

COMMITTED = Path(__file__).resolve().parents[3] / "openapi" / "powercontext.yaml"
DOCUMENT = yaml.safe_load(COMMITTED.read_text())
METHODS = ("get", "post", "put", "patch", "delete")
AGENT_TOKEN = "examples-agent-token"
# Examples that cannot be replayed here, and why.
NOT_REPLAYED = {
    # A failing readiness check needs a broken database or pending migrations.
    ("health_ready", "503", "Not ready"),
}
# drf-spectacular's fragment for `null` in a nullable choice; no schema of ours.
UNDESCRIBED_COMPONENTS = {"NullEnum"}
INHERITED_DESCRIPTION = StrictSerializer.__doc__.strip()


def operations():
    for path, item in DOCUMENT["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


OPERATIONS = {
    operation["operationId"]: (path, method, operation) for path, method, operation in operations()
}


def request_examples(operation) -> dict[str, Any]:
    media = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    return named(media)


def response_examples(operation, status: str) -> dict[str, Any]:
    media = operation["responses"][status].get("content", {}).get("application/json", {})
    return named(media)


def named(media: dict) -> dict[str, Any]:
    """A media type's examples by name (drf-spectacular leaves out a ``summary`` that
    would repeat the key)."""
    examples = media.get("examples", {})
    return {example.get("summary", key): example["value"] for key, example in examples.items()}


def every_example():
    for operation_id, (_, _, operation) in OPERATIONS.items():
        media = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if media:
            for name, value in named(media).items():
                yield operation_id, "request", name, media["schema"], value
        for status, answer in operation["responses"].items():
            media = answer.get("content", {}).get("application/json")
            if media:
                for name, value in named(media).items():
                    yield operation_id, status, name, media["schema"], value


# --- The document describes every operation --------------------------------------------


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_every_operation_is_described_with_examples(operation_id):
    _, _, operation = OPERATIONS[operation_id]
    assert operation.get("description", "").strip(), "no description"
    if "requestBody" in operation:
        assert request_examples(operation), "a body but no request example"
    successes = [status for status in operation["responses"] if status.startswith("2")]
    assert successes
    for status in successes:
        assert response_examples(operation, status), f"no example of the {status} answer"
    for status, answer in operation["responses"].items():
        assert answer.get("description", "").strip(), f"no description of the {status} answer"


@pytest.mark.parametrize("name", sorted(DOCUMENT["components"]["schemas"]))
def test_every_schema_has_its_own_description(name):
    if name in UNDESCRIBED_COMPONENTS:
        return
    description = DOCUMENT["components"]["schemas"][name].get("description", "").strip()
    assert description, f"{name} has no description"
    assert description != INHERITED_DESCRIPTION, f"{name} inherits StrictSerializer's docstring"


# --- Every example validates against its schema ----------------------------------------


def json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: ``nullable`` becomes a null alternative, and
    objects are closed, so that an example cannot show a field the schema does not name."""
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: json_schema(value) for key, value in node.items() if key != "nullable"}
    if "properties" in converted and "additionalProperties" not in converted:
        converted["additionalProperties"] = False
    if node.get("nullable"):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


COMPONENTS = json_schema(DOCUMENT["components"])


def validate(schema: dict, value: Any) -> list[str]:
    # `#/components/...` references resolve against the root, which carries the components.
    root = {**json_schema(schema), "components": COMPONENTS}
    validator = jsonschema.Draft202012Validator(root)
    return [
        f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(value)
    ]


def test_the_document_has_examples_to_check():
    assert len(list(every_example())) >= 2 * len(OPERATIONS)


@pytest.mark.parametrize(
    ("operation_id", "where", "name", "schema", "value"),
    list(every_example()),
    ids=[f"{op}-{where}-{name}" for op, where, name, _, _ in every_example()],
)
def test_every_example_validates_against_its_schema(operation_id, where, name, schema, value):
    assert validate(schema, value) == []


def test_validation_catches_a_wrong_example():
    # The check above can fail: a missing field, an unknown field and a wrong type.
    _, _, operation = OPERATIONS["remember_memory"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    good = response_examples(operation, "200")["Remembered"]
    assert validate(schema, good) == []
    missing = copy.deepcopy(good)
    del missing["memory"]
    unknown = copy.deepcopy(good)
    unknown["entry"]["color"] = "blue"
    wrong_type = copy.deepcopy(good)
    wrong_type["entry"]["version"] = "1"
    for bad in (missing, unknown, wrong_type):
        assert validate(schema, bad) != []


# --- The story is true: replayed against the API ----------------------------------------


class Story:
    """Sends the document's example requests and compares the answers with its example
    answers, learning the real ids the example ids stand for."""

    def __init__(self, agent: ApiClient, reviewer: ApiClient):
        self.callers = {"agent": agent, "reviewer": reviewer, "none": ApiClient(Client())}
        self.ids: dict[str, str] = {}
        self.replayed: set[tuple[str, str, str]] = set()

    def real(self, value: Any) -> Any:
        """``value`` with the example ids replaced by the real ones (inside strings too:
        a Context Pack's content quotes citations)."""
        if isinstance(value, dict):
            return {key: self.real(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.real(item) for item in value]
        if isinstance(value, str):
            for example_id, real_id in self.ids.items():
                value = value.replace(example_id, real_id)
        return value

    def request(self, operation_id: str, name: str) -> dict:
        return copy.deepcopy(request_examples(OPERATIONS[operation_id][2])[name])

    def send(self, operation_id: str, body: dict | None = None, caller: str = "agent"):
        path, method, _ = OPERATIONS[operation_id]
        client = self.callers[caller]
        if method == "get":
            return client.get(path)
        return client.post(path, self.real(body))

    def answer(self, operation_id: str, status: str, name: str, response) -> None:
        """The response is the example answer ``name`` of ``status``."""
        expected = response_examples(OPERATIONS[operation_id][2], status)[name]
        assert str(response.status_code) == status, response.content
        actual = response.json()
        self.learn(expected, actual, "$")
        assert actual == self.real(expected)
        self.replayed.add((operation_id, status, name))

    def learn(self, expected: Any, actual: Any, where: str) -> None:
        """Same shape (keys, types, lengths); an example id is matched by a real id of
        the same kind, and the same one wherever it appears."""
        assert type(actual) is type(expected), f"{where}: {actual!r} for {expected!r}"
        if isinstance(expected, dict):
            assert set(actual) == set(expected), where
            for key in expected:
                self.learn(expected[key], actual[key], f"{where}.{key}")
        elif isinstance(expected, list):
            assert len(actual) == len(expected), where
            for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
                self.learn(left, right, f"{where}.{index}")
        elif isinstance(expected, str):
            for prefix, pattern in ID_PATTERNS.items():
                if re.match(pattern, expected):
                    assert re.match(pattern, actual), f"{where}: {actual!r} is not a {prefix} id"
                    assert self.ids.setdefault(expected, actual) == actual, where

    def step(self, operation_id, request_name, status, answer_name, caller="agent", **changes):
        body = None
        if request_name is not None:
            body = {**self.request(operation_id, request_name), **changes}
        self.answer(operation_id, status, answer_name, self.send(operation_id, body, caller))


@pytest.fixture
def story(transactional_db, settings):
    # transactional_db: the search example is hybrid, and on OceanBase the vector table's
    # DDL (which commits) waits for the first write outside a transaction. A flushed
    # database has lost the reviewer group its migration made: make it again.
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    reviewer_group = importlib.import_module("experience.migrations.0003_reviewer_group")
    # The migration's function marks the apps it is given as having no models once done
    # (right for its historical registry); given the live one, that would stop every
    # later test from making these apps' permissions again: put the live marks back.
    configs = [apps.get_app_config(label) for label, _ in reviewer_group.PERMISSIONS]
    kept = [(config, config.models_module) for config in configs]
    try:
        reviewer_group.create_group(apps, SimpleNamespace(connection=connection))
    finally:
        for config, models_module in kept:
            config.models_module = models_module
    settings.POWERCONTEXT_API_TOKEN = AGENT_TOKEN
    reviewer_token = experience_services.reviewer_token_issue(username="ana", create=True).token
    return Story(ApiClient(Client(), token=AGENT_TOKEN), ApiClient(Client(), token=reviewer_token))


def test_the_examples_are_a_true_story(story, monkeypatch):
    story.step("health_live", None, "200", "Live", caller="none")
    story.step("health_ready", None, "200", "Ready", caller="none")
    story.step("capabilities", None, "200", "This server")

    story.step("capture_content_source", "A prompt", "202", "Accepted")
    story.step("capture_content_source", "A prompt", "202", "Accepted")
    story.step(
        "capture_content_source", "A prompt", "409", "Same id, other payload", content="other"
    )
    story.step("capture_content_source", "A prompt", "403", "Personal token", caller="reviewer")

    story.step("remember_memory", "A convention", "200", "Remembered")
    story.step("remember_memory", "A convention", "200", "Already remembered")
    story.step("remember_memory", "A convention", "403", "Personal token", caller="reviewer")
    story.step(
        "remember_memory", "A convention", "409", "Stale expected_revision", expected_revision=0
    )
    story.step("remember_memory", "A convention", "422", "Blank kind and text", kind="", text="   ")

    story.step("search_memory", "Words of a prompt", "200", "One hit")
    with monkeypatch.context() as switched_off:
        switched_off.setenv("POWERCONTEXT_EMBEDDINGS", "off")
        story.step(
            "search_memory", "Words of a prompt", "422", "Vector search, channel off", mode="vector"
        )
    story.step("list_memory_entries", "Active entries", "200", "One page")
    story.step("get_memory_entry", "By citation", "200", "The cited version")
    citation = story.request("get_memory_entry", "By citation")["citation"]
    unknown_version = {**citation, "entry_version_id": "mem_ver_" + "0" * 32}
    story.step(
        "get_memory_entry", "By citation", "404", "No such version", citation=unknown_version
    )

    story.step("revise_memory_entry", "New text", "200", "Revised")
    story.step("revise_memory_entry", "New text", "409", "Superseded citation")
    story.step("revise_memory_entry", "New text", "403", "Personal token", caller="reviewer")
    story.step("retire_memory_entry", "Retire", "200", "Retired")
    story.step("retire_memory_entry", "Retire", "409", "Already retired")
    story.step("retire_memory_entry", "Retire", "409", "Superseded citation", citation=citation)
    story.step("retire_memory_entry", "Retire", "403", "Personal token", caller="reviewer")
    story.step("reactivate_memory_entry", "Reactivate", "200", "Active again")
    story.step(
        "reactivate_memory_entry", "Reactivate", "409", "Superseded citation", citation=citation
    )
    story.step("reactivate_memory_entry", "Reactivate", "403", "Personal token", caller="reviewer")
    story.step("memory_changes", "From the start", "200", "First two revisions")

    story.step("propose_experience", "A prompt as evidence", "201", "Pending candidate")
    story.step(
        "propose_experience",
        "A prompt as evidence",
        "422",
        "Evidence never captured",
        source_refs=[{"name": "content", "source_id": "prompt-43"}],
    )
    story.step(
        "propose_experience", "A prompt as evidence", "403", "Personal token", caller="reviewer"
    )
    story.step("list_artifact_candidates", "Pending, first page", "200", "One pending candidate")
    story.step("get_artifact_candidate", "Still at version 1?", "200", "Current version")

    story.step(
        "revise_artifact_candidate", "Sharpen the lesson", "403", "The agent token", caller="agent"
    )
    story.step(
        "revise_artifact_candidate",
        "Sharpen the lesson",
        "200",
        "Version 2, still pending",
        caller="reviewer",
    )
    story.step(
        "revise_artifact_candidate",
        "Sharpen the lesson",
        "409",
        "Stale version",
        caller="reviewer",
    )
    story.step("get_artifact_candidate", "Still at version 1?", "409", "Stale version")
    story.step("approve_artifact_candidate", "Approve version 2", "403", "The agent token")
    story.step(
        "approve_artifact_candidate", "Approve version 2", "200", "Approved", caller="reviewer"
    )
    story.step(
        "approve_artifact_candidate",
        "Approve version 2",
        "409",
        "Already decided",
        caller="reviewer",
    )
    story.step("get_experience", "An approved revision", "200", "The lesson")
    artifact = story.request("get_experience", "An approved revision")["artifact"]
    story.step(
        "get_experience",
        "An approved revision",
        "404",
        "No such revision",
        artifact={**artifact, "revision": 2},
    )

    # The duplicate the reviewer rejects: the same proposal without a reason.
    duplicate = story.request("propose_experience", "A prompt as evidence")
    del duplicate["reason"]
    answer = story.send("propose_experience", duplicate).json()
    reject = story.request("reject_artifact_candidate", "A duplicate")
    story.ids[reject["candidate_id"]] = answer["candidate_id"]
    story.step("reject_artifact_candidate", "A duplicate", "403", "The agent token")
    story.step("reject_artifact_candidate", "A duplicate", "200", "Rejected", caller="reviewer")
    story.step(
        "reject_artifact_candidate", "A duplicate", "409", "Already decided", caller="reviewer"
    )

    story.step("prepare_context", "The agent's prompt", "200", "A ready pack")
    story.step(
        "prepare_context", "The agent's prompt", "200", "Nothing relevant", scope_id="elsewhere"
    )
    story.step("session_context", "A new session", "200", "A session's pack")
    story.step("session_context", "A new session", "200", "Nothing relevant", scope_id="elsewhere")

    for operation_id, (_, _, operation) in OPERATIONS.items():
        if "401" in operation["responses"]:
            body = next(iter(request_examples(operation)), None)
            story.step(operation_id, body, "401", "No or wrong token", caller="none")

    every = {(operation_id, where, name) for operation_id, where, name, _, _ in every_example()}
    responses = {example for example in every if example[1] != "request"}
    assert responses - story.replayed == NOT_REPLAYED


def test_the_replay_catches_a_wrong_example(story):
    # The comparison can fail: an example answer that is not what the server says.
    story.step("capture_content_source", "A prompt", "202", "Accepted")
    response = story.send(
        "capture_content_source", story.request("capture_content_source", "A prompt")
    )
    expected = response_examples(OPERATIONS["capture_content_source"][2], "202")["Accepted"]
    with pytest.raises(AssertionError):
        story.learn({**expected, "position": "1"}, response.json(), "$")
    with pytest.raises(AssertionError):
        story.learn({**expected, "id": "cand_" + "0" * 32}, response.json(), "$")
