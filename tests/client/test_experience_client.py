"""The client's Experience and candidate operations against the live server."""

import pytest
from django.contrib.auth import get_user_model

from powercontext_client import Conflict, NotFound, PermissionDenied, PowerContextClient

from .conftest import SCOPE

AGENT_TOKEN = "agent-token-0123456789abcdef0123"


PROPOSAL = {
    "situation": "The integration suite hung.",
    "action": "Set a busy timeout on SQLite.",
    "outcome": "It stopped hanging.",
    "lesson": "SQLite under concurrency needs a busy timeout.",
}


def test_propose_review_and_get_experience(live_url, settings):
    from experience.services import reviewer_token_issue

    settings.POWERCONTEXT_API_TOKEN = AGENT_TOKEN
    get_user_model().objects.create_superuser("reviewer", password=None)
    reviewer_token = reviewer_token_issue(username="reviewer").token
    refs = [{"name": "content", "source_id": "turn-3"}]
    with (
        PowerContextClient(live_url, token=AGENT_TOKEN) as agent,
        PowerContextClient(live_url, token=reviewer_token) as reviewer,
    ):
        agent.capture_content_source(scope_id=SCOPE, source_id="turn-3", content="It hung.")
        candidate = agent.propose_experience(scope_id=SCOPE, proposal=PROPOSAL, source_refs=refs)
        assert (candidate["status"], candidate["version"]) == ("pending", 1)
        listed = agent.list_artifact_candidates(scope_id=SCOPE)
        assert [c["candidate_id"] for c in listed["candidates"]] == [candidate["candidate_id"]]
        ident = {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"]}
        assert agent.get_artifact_candidate(**ident) == candidate

        # Deciding is a human act: the agent's token may not.
        with pytest.raises(PermissionDenied) as raised:
            agent.approve_artifact_candidate(**ident, expected_version=1)
        assert (raised.value.code, raised.value.status) == ("permission_denied", 403)

        revised = reviewer.revise_artifact_candidate(
            **ident, expected_version=1, proposal={**PROPOSAL, "lesson": "Set busy_timeout."}
        )
        assert revised["version"] == 2
        with pytest.raises(Conflict) as raised:
            reviewer.approve_artifact_candidate(**ident, expected_version=1)
        assert raised.value.code == "candidate_conflict"
        approved = reviewer.approve_artifact_candidate(**ident, expected_version=2)
        assert approved["status"] == "approved"
        with pytest.raises(Conflict) as raised:
            reviewer.reject_artifact_candidate(**ident, expected_version=2, reason="late")
        assert raised.value.code == "candidate_terminal"

        experience = agent.get_experience(scope_id=SCOPE, artifact=approved["result_artifact"])
        assert experience["content"]["lesson"] == "Set busy_timeout."
        with pytest.raises(NotFound) as raised:
            agent.get_artifact_candidate(scope_id=SCOPE, candidate_id="cand_" + "0" * 32)
        assert raised.value.code == "candidate_not_found"
