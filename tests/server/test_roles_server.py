"""The roles on a real ``manage.py serve`` process, for a few representative routes and
tools: tokens issued by ``manage.py reviewer_token``, as an operator would."""

import asyncio

import pytest

from tests.experience.servers import AGENT_TOKEN, Server, manage
from tests.powercontext.api.roles import PROPOSAL
from tests.server.mcp.conftest import call, http_client

SCOPE = "git:example.com/acme/roles-served"


@pytest.fixture
def served(tmp_path, transactional_db):
    server = Server(tmp_path)  # migrates the database
    try:
        decider = manage(tmp_path, "reviewer_token", "dora", "--create").strip()
        manage(
            tmp_path,
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; "
            "get_user_model().objects.create_user('ralf')",
        )
        reader = manage(tmp_path, "reviewer_token", "ralf").strip()
        yield server, {"agent": AGENT_TOKEN, "decider": decider, "reader": reader}
    finally:
        server.stop()


def _tool(server, token, name, arguments):
    async def scenario():
        async with http_client(server.url.rstrip("/"), token) as mcp:
            return await call(mcp, name, arguments)

    return asyncio.run(scenario())


@pytest.mark.slow
def test_a_served_personal_token_reads_and_decides_but_never_writes(served):
    server, tokens = served
    remember = {"scope_id": SCOPE, "kind": "note", "text": "Deploys go through staging."}
    for person in ("reader", "decider"):
        status, body = server.post("v1/memory/remember", remember, token=tokens[person])
        assert (status, body["error"]["code"]) == (403, "permission_denied"), person
        capture = {"scope_id": SCOPE, "source_id": "p", "content": "a prompt"}
        status, _ = server.post("v1/sources/content", capture, token=tokens[person])
        assert status == 403, person
    status, written = server.post("v1/memory/remember", remember)
    assert status == 200
    assert written["memory"]["revision"] == 1  # the refused writes left nothing behind

    search = {"scope_id": SCOPE, "query": "staging"}
    for caller in ("reader", "decider", "agent"):
        status, found = server.post("v1/memory/search", search, token=tokens[caller])
        assert status == 200, caller
        assert len(found["hits"]) == 1, caller

    evidence = [{"family": "memory", "artifact_id": "memory", "revision": 1}]
    propose = {"scope_id": SCOPE, "proposal": PROPOSAL, "artifact_refs": evidence}
    status, _ = server.post("v1/experience/propose", propose, token=tokens["decider"])
    assert status == 403
    status, candidate = server.post("v1/experience/propose", propose)
    assert status == 201
    approve = {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"], "expected_version": 1}
    for caller in ("reader", "agent"):
        status, body = server.post("v1/artifact-candidates/approve", approve, token=tokens[caller])
        assert (status, body["error"]["code"]) == (403, "permission_denied"), caller
    status, approved = server.post(
        "v1/artifact-candidates/approve", approve, token=tokens["decider"]
    )
    assert (status, approved["status"]) == (200, "approved")

    # /mcp: the same rule.
    failed, refused = _tool(server, tokens["reader"], "remember_memory", remember)
    assert failed
    assert refused["error"]["code"] == "permission_denied"
    failed, found = _tool(server, tokens["reader"], "search_memory", search)
    assert not failed
    assert len(found["hits"]) == 1
    failed, _ = _tool(server, tokens["agent"], "remember_memory", {**remember, "text": "New."})
    assert not failed
