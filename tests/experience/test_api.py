"""The Experience and candidate HTTP operations (DESIGN.md §4)."""

import base64
import json

import pytest
from django.contrib.auth import get_user_model

from experience import services
from tests.conftest import ApiClient, error_code, error_fields
from tests.experience.conftest import SCOPE, SOURCE, capture_source, proposal

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _source_captured(db):
    capture_source()


def test_propose_creates_a_pending_candidate(propose):
    candidate = propose()
    assert candidate["candidate_id"].startswith("cand_")
    assert len(candidate["candidate_id"]) == len("cand_") + 32
    assert candidate == {
        "candidate_id": candidate["candidate_id"],
        "version": 1,
        "family": "experience",
        "status": "pending",
        "proposal": proposal(),
        "source_refs": [SOURCE],
        "artifact_refs": [],
        "target": None,
        "reason": None,
        "result_artifact": None,
        "decision_reason": None,
    }


def test_a_source_never_captured_in_the_scope_is_422_on_the_reference(api, propose):
    before = api.ok("/v1/artifact-candidates/list", {"scope_id": SCOPE})["candidates"]
    missing = {"name": "content", "source_id": "never-captured"}
    response = api.post(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "source_refs": [SOURCE, missing]},
    )
    assert response.status_code == 422
    assert error_code(response) == "invalid_request"
    assert error_fields(response) == ["source_refs.1"]
    # Captured in another scope is not captured in this one.
    capture_source("scope-b", missing)
    other = api.post(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "source_refs": [missing]},
    )
    assert error_fields(other) == ["source_refs.0"]
    assert api.ok("/v1/artifact-candidates/list", {"scope_id": SCOPE})["candidates"] == before
    capture_source(SCOPE, missing)
    assert propose(source_refs=[missing])["source_refs"] == [missing]


def test_a_reviser_cannot_cite_a_source_never_captured(api, propose, reviewer_api):
    candidate = propose()
    missing = {"name": "content", "source_id": "never-captured"}
    body = {
        "scope_id": SCOPE,
        "candidate_id": candidate["candidate_id"],
        "expected_version": 1,
        "proposal": proposal("A better lesson."),
        "source_refs": [missing],
    }
    response = reviewer_api.post("/v1/artifact-candidates/revise", body)
    assert response.status_code == 422
    assert error_fields(response) == ["source_refs.0"]
    got = {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"]}
    assert api.ok("/v1/artifact-candidates/get", got)["version"] == 1


def test_propose_needs_at_least_one_reference(api):
    response = api.post(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "source_refs": [], "artifact_refs": []},
    )
    assert response.status_code == 422
    assert error_fields(response) == ["source_refs"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("lesson", ""), ("lesson", "   \n"), ("situation", "x" * 8001), ("action", 5)],
)
def test_proposal_fields_are_strict(api, field, value):
    body = {"scope_id": SCOPE, "proposal": {**proposal(), field: value}, "source_refs": [SOURCE]}
    response = api.post("/v1/experience/propose", body)
    assert response.status_code == 422
    assert error_fields(response) == [f"proposal.{field}"]


def test_proposal_field_of_8000_characters_is_accepted(propose):
    assert propose(proposal=proposal("é" * 8000))["proposal"]["lesson"] == "é" * 8000


def test_propose_limits_refs_and_reason(api):
    too_many = [{"name": "content", "source_id": f"p{i}"} for i in range(33)]
    response = api.post(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "source_refs": too_many},
    )
    assert response.status_code == 422
    assert error_fields(response) == ["source_refs"]
    response = api.post(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "source_refs": [SOURCE], "reason": "r" * 2001},
    )
    assert error_fields(response) == ["reason"]


def test_propose_rejects_unknown_fields(api):
    body = {"scope_id": SCOPE, "proposal": {**proposal(), "extra": "x"}, "source_refs": [SOURCE]}
    response = api.post("/v1/experience/propose", body)
    assert response.status_code == 422
    assert error_fields(response) == ["proposal.extra"]


def test_cited_artifact_must_exist(api, remember):
    memory = remember("Persistence tests live in tests/db.")["memory"]
    ok = api.post(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "artifact_refs": [memory]},
    )
    assert ok.status_code == 201
    assert ok.json()["artifact_refs"] == [memory]
    missing = api.post(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "artifact_refs": [{**memory, "revision": 9}]},
    )
    assert missing.status_code == 404
    assert error_code(missing) == "artifact_not_found"


def test_agent_token_cannot_decide(api, propose, settings):
    settings.POWERCONTEXT_API_TOKEN = "agent-secret"
    agent = ApiClient(api.client, token="agent-secret")
    candidate = agent.ok(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "source_refs": [SOURCE]},
        status=201,
    )
    body = {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"], "expected_version": 1}
    for operation, extra in [
        ("approve", {}),
        ("reject", {"reason": "no"}),
        ("revise", {"proposal": proposal("other")}),
    ]:
        response = agent.post(f"/v1/artifact-candidates/{operation}", {**body, **extra})
        assert response.status_code == 403, operation
        assert error_code(response) == "permission_denied"
    # Even an invalid body: permission is decided before validation.
    assert agent.post("/v1/artifact-candidates/approve", {}).status_code == 403
    assert agent.ok("/v1/artifact-candidates/get", body)["status"] == "pending"


def test_no_token_is_401_when_the_agent_token_is_set(api, settings):
    settings.POWERCONTEXT_API_TOKEN = "agent-secret"
    response = api.post("/v1/artifact-candidates/approve", {})
    assert response.status_code == 401
    assert error_code(response) == "unauthorized"
    wrong = ApiClient(api.client, token="pcr_not-a-real-token")
    assert wrong.post("/v1/artifact-candidates/list", {"scope_id": SCOPE}).status_code == 401


def test_reviewer_without_permission_gets_403(client, propose):
    issued = services.reviewer_token_issue(username="staffer", create=True)
    user = get_user_model().objects.get(username="staffer")
    user.groups.clear()
    candidate = propose()
    response = ApiClient(client, token=issued.token).post(
        "/v1/artifact-candidates/approve",
        {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"], "expected_version": 1},
    )
    assert response.status_code == 403
    assert error_code(response) == "permission_denied"


def test_reviewer_approves_and_experience_get_names_the_exact_revision(
    api, propose, approve, reviewer
):
    candidate = propose(reason="Seen twice this week.")
    approved = approve(candidate)
    artifact = approved["result_artifact"]
    assert approved["status"] == "approved"
    assert artifact["family"] == "experience"
    assert artifact["artifact_id"].startswith("exp_")
    assert len(artifact["artifact_id"]) == 36
    assert artifact["revision"] == 1
    fetched = api.ok("/v1/experience/get", {"scope_id": SCOPE, "artifact": artifact})
    assert fetched == {
        "artifact": artifact,
        "content": proposal(),
        "source_refs": [SOURCE],
        "artifact_refs": [],
    }
    from experience.models import Candidate

    decided = Candidate.objects.get(candidate_id=candidate["candidate_id"])
    assert decided.decided_by == reviewer
    assert decided.decided_by_username == "rita"
    assert decided.decided_at is not None


def test_reject_needs_a_reason(reviewer_api, propose):
    candidate = propose()
    body = {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"], "expected_version": 1}
    for reason in (None, "", "  "):
        extra = {} if reason is None else {"reason": reason}
        response = reviewer_api.post("/v1/artifact-candidates/reject", {**body, **extra})
        assert response.status_code == 422
        assert error_fields(response) == ["reason"]


def test_rejected_candidate_records_the_reason(reject, propose):
    rejected = reject(propose(), reason="Too specific to one incident.")
    assert rejected["status"] == "rejected"
    assert rejected["decision_reason"] == "Too specific to one incident."
    assert rejected["result_artifact"] is None


def test_stale_version_is_a_candidate_conflict(reviewer_api, propose):
    candidate = propose()
    revised = reviewer_api.ok(
        "/v1/artifact-candidates/revise",
        {
            "scope_id": SCOPE,
            "candidate_id": candidate["candidate_id"],
            "expected_version": 1,
            "proposal": proposal("Run the importer's migration test after schema changes."),
        },
    )
    assert revised["version"] == 2
    assert revised["source_refs"] == [SOURCE]
    assert revised["proposal"]["lesson"].startswith("Run the importer's")
    stale = reviewer_api.post(
        "/v1/artifact-candidates/approve",
        {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"], "expected_version": 1},
    )
    assert stale.status_code == 409
    assert error_code(stale) == "candidate_conflict"


def test_decided_candidate_is_terminal_and_terminal_wins_over_conflict(
    reviewer_api, propose, approve
):
    candidate = propose()
    approve(candidate)
    for version in (1, 7):
        for operation, extra in [
            ("approve", {}),
            ("reject", {"reason": "late"}),
            ("revise", {"proposal": proposal("x")}),
        ]:
            response = reviewer_api.post(
                f"/v1/artifact-candidates/{operation}",
                {
                    "scope_id": SCOPE,
                    "candidate_id": candidate["candidate_id"],
                    "expected_version": version,
                    **extra,
                },
            )
            assert response.status_code == 409, (operation, version)
            assert error_code(response) == "candidate_terminal"


def test_unknown_candidate_or_other_scope_is_not_found(reviewer_api, propose):
    candidate = propose()
    for scope, candidate_id in [
        ("scope-b", candidate["candidate_id"]),
        (SCOPE, "cand_" + "0" * 32),
    ]:
        response = reviewer_api.post(
            "/v1/artifact-candidates/approve",
            {"scope_id": scope, "candidate_id": candidate_id, "expected_version": 1},
        )
        assert response.status_code == 404
        assert error_code(response) == "candidate_not_found"


def test_revising_an_experience_through_a_target(api, propose, approve):
    first = approve(propose("Pin the importer's schema version."))["result_artifact"]
    second = approve(propose("Pin the importer's schema version in CI too.", target=first))
    assert second["result_artifact"] == {**first, "revision": 2}
    assert second["target"] == first
    old = api.ok("/v1/experience/get", {"scope_id": SCOPE, "artifact": first})
    assert old["content"]["lesson"] == "Pin the importer's schema version."
    new = api.ok("/v1/experience/get", {"scope_id": SCOPE, "artifact": second["result_artifact"]})
    assert new["content"]["lesson"] == "Pin the importer's schema version in CI too."


def test_target_that_moved_on_is_a_revision_conflict(api, reviewer_api, propose, approve):
    first = approve(propose("Version one."))["result_artifact"]
    one = propose("Version two, by one agent.", target=first)
    other = propose("Version two, by another agent.", target=first)
    approve(one)
    response = reviewer_api.post(
        "/v1/artifact-candidates/approve",
        {"scope_id": SCOPE, "candidate_id": other["candidate_id"], "expected_version": 1},
    )
    assert response.status_code == 409
    assert error_code(response) == "revision_conflict"
    assert "moved on since it was proposed" in response.json()["error"]["message"]
    still = api.ok(
        "/v1/artifact-candidates/get", {"scope_id": SCOPE, "candidate_id": other["candidate_id"]}
    )
    assert still["status"] == "pending"
    # Proposing against a superseded revision is refused up front.
    late = api.post(
        "/v1/experience/propose",
        {"scope_id": SCOPE, "proposal": proposal(), "source_refs": [SOURCE], "target": first},
    )
    assert late.status_code == 409
    assert error_code(late) == "revision_conflict"


def test_target_must_be_an_existing_experience(api):
    body = {"scope_id": SCOPE, "proposal": proposal(), "source_refs": [SOURCE]}
    missing = api.post(
        "/v1/experience/propose",
        {
            **body,
            "target": {"family": "experience", "artifact_id": "exp_" + "1" * 32, "revision": 1},
        },
    )
    assert missing.status_code == 404
    assert error_code(missing) == "artifact_not_found"
    memory = api.post(
        "/v1/experience/propose",
        {**body, "target": {"family": "memory", "artifact_id": "memory", "revision": 1}},
    )
    assert memory.status_code == 422
    assert error_fields(memory) == ["target"]


def test_experience_get_finds_only_approved_revisions(api, propose, approve, reject):
    pending = propose("Pending lesson.")
    rejected = reject(propose("Rejected lesson."))
    approved = approve(propose("Approved lesson."))["result_artifact"]
    for artifact in [
        {"family": "experience", "artifact_id": pending["candidate_id"], "revision": 1},
        {"family": "experience", "artifact_id": rejected["candidate_id"], "revision": 1},
        {**approved, "revision": 2},
        {**approved, "family": "memory"},
    ]:
        response = api.post("/v1/experience/get", {"scope_id": SCOPE, "artifact": artifact})
        assert response.status_code == 404, artifact
        assert error_code(response) == "artifact_not_found"
    other_scope = api.post("/v1/experience/get", {"scope_id": "scope-b", "artifact": approved})
    assert other_scope.status_code == 404


def test_list_is_newest_first_with_a_keyset_cursor(api, propose, approve):
    created = [propose(f"Lesson number {i}.") for i in range(5)]
    approve(created[0])
    seen, cursor = [], None
    while True:
        body = {"scope_id": SCOPE, "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.ok("/v1/artifact-candidates/list", body)
        seen += [candidate["candidate_id"] for candidate in page["candidates"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [candidate["candidate_id"] for candidate in reversed(created[1:])]
    approved = api.ok("/v1/artifact-candidates/list", {"scope_id": SCOPE, "status": "approved"})
    assert [c["candidate_id"] for c in approved["candidates"]] == [created[0]["candidate_id"]]
    other = api.ok("/v1/artifact-candidates/list", {"scope_id": SCOPE, "family": "skill"})
    assert other == {"candidates": [], "next_cursor": None}


def test_list_ties_on_time_break_by_candidate_id(api, propose):
    from experience.models import Candidate

    created = [propose(f"Same moment {i}.") for i in range(3)]
    moment = Candidate.objects.get(candidate_id=created[0]["candidate_id"]).created_at
    Candidate.objects.filter(scope_id=SCOPE).update(created_at=moment)
    ids = sorted(candidate["candidate_id"] for candidate in created)
    first = api.ok("/v1/artifact-candidates/list", {"scope_id": SCOPE, "limit": 2})
    rest = api.ok(
        "/v1/artifact-candidates/list",
        {"scope_id": SCOPE, "limit": 2, "cursor": first["next_cursor"]},
    )
    assert [c["candidate_id"] for c in first["candidates"] + rest["candidates"]] == ids
    assert rest["next_cursor"] is None


@pytest.mark.parametrize("cursor", ["garbage", "e30", "W10", "!!!"])
def test_bad_cursor_is_422_on_cursor(api, cursor):
    response = api.post("/v1/artifact-candidates/list", {"scope_id": SCOPE, "cursor": cursor})
    assert response.status_code == 422
    assert error_fields(response) == ["cursor"]


def test_cursor_is_bound_to_its_filters(api, propose):
    propose("one")
    propose("two")
    page = api.ok("/v1/artifact-candidates/list", {"scope_id": SCOPE, "limit": 1})
    for changed in [{"status": "approved"}, {"family": "experience"}, {"scope_id": "scope-b"}]:
        body = {"scope_id": SCOPE, "limit": 1, "cursor": page["next_cursor"], **changed}
        response = api.post("/v1/artifact-candidates/list", body)
        assert response.status_code == 422, changed
        assert error_fields(response) == ["cursor"]


@pytest.mark.parametrize(
    ("field", "value"), [("limit", 0), ("limit", 101), ("limit", "10"), ("status", "any")]
)
def test_list_input_is_strict(api, field, value):
    response = api.post("/v1/artifact-candidates/list", {"scope_id": SCOPE, field: value})
    assert response.status_code == 422
    assert error_fields(response) == [field]


def test_get_with_expected_version(api, propose):
    candidate = propose()
    body = {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"]}
    assert api.ok("/v1/artifact-candidates/get", {**body, "expected_version": 1}) == candidate
    stale = api.post("/v1/artifact-candidates/get", {**body, "expected_version": 2})
    assert stale.status_code == 409
    assert error_code(stale) == "candidate_conflict"


def test_capabilities_list_the_experience_family(api):
    assert api.get("/v1/capabilities").json()["artifact_families"] == ["memory", "experience"]


@pytest.mark.parametrize("created", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_cursor_with_a_time_outside_utc_is_422_not_500(api, propose, created):
    # Found while fuzzing the API: a cursor time with no UTC equivalent overflowed
    # when the query converted it (500 internal_error).
    propose("one")
    propose("two")
    issued = api.ok("/v1/artifact-candidates/list", {"scope_id": SCOPE, "limit": 1})["next_cursor"]
    filters, _, after = json.loads(base64.urlsafe_b64decode(issued + "=" * (-len(issued) % 4)))
    forged = base64.urlsafe_b64encode(json.dumps([filters, created, after]).encode()).decode()
    response = api.post("/v1/artifact-candidates/list", {"scope_id": SCOPE, "cursor": forged})
    assert response.status_code == 422
    assert error_fields(response) == ["cursor"]
