"""The MCP tools: the pinned list, their schemas, and every tool called through the SDK's
client over Streamable HTTP at ``/mcp``, compared with the HTTP API on the same server."""

import asyncio
from pathlib import Path

import httpx
import pytest
import yaml
from django.contrib.auth import get_user_model
from mcp import Client

from experience import services as experience_services
from powercontext.sources import source_capture
from powercontext_client import errors
from server.mcp.server import TOOL_NAMES, build_server

from .conftest import call, http_client

SCOPE = "git:example.com/acme/mcp-widgets"
TOKEN = "mcp-test-token-0123456789abcdef"
REPO_ROOT = Path(__file__).resolve().parents[3]


EXPECTED_TOOLS = [
    "search_memory",
    "list_memory_entries",
    "get_memory_entry",
    "remember_memory",
    "revise_memory_entry",
    "retire_memory_entry",
    "get_experience",
    "propose_experience",
]
READ_ONLY = {"search_memory", "list_memory_entries", "get_memory_entry", "get_experience"}


def listed_tools():
    async def listing():
        async with Client(build_server()) as client:
            return (await client.list_tools()).tools

    return asyncio.run(listing())


def test_the_tool_list_is_exactly_the_curated_set():
    tools = listed_tools()
    assert [tool.name for tool in tools] == EXPECTED_TOOLS == list(TOOL_NAMES)
    # The Context Pack is the hook's, never a tool (RFC 0028); decisions are human.
    for excluded in ("prepare_context", "approve_artifact_candidate", "reject_artifact_candidate"):
        assert excluded not in TOOL_NAMES


def test_read_only_annotations_where_true():
    for tool in listed_tools():
        hints = tool.annotations
        assert hints.read_only_hint is (tool.name in READ_ONLY), tool.name
        assert hints.open_world_hint is False
        if tool.name in READ_ONLY:
            assert hints.idempotent_hint is True
    by_name = {tool.name: tool for tool in listed_tools()}
    assert by_name["retire_memory_entry"].annotations.destructive_hint is True
    assert by_name["remember_memory"].annotations.destructive_hint is False


OPENAPI_INPUTS = {
    "search_memory": "MemorySearchInputRequest",
    "list_memory_entries": "MemoryEntriesListInputRequest",
    "get_memory_entry": "MemoryEntryGetInputRequest",
    "remember_memory": "MemoryRememberInputRequest",
    "revise_memory_entry": "MemoryEntryReviseInputRequest",
    "retire_memory_entry": "MemoryEntryStateInputRequest",
}
LIMIT_KEYS = ("minLength", "maxLength", "minimum", "maximum", "default")


def test_input_schemas_carry_the_openapi_limits():
    components = yaml.safe_load((REPO_ROOT / "openapi" / "powercontext.yaml").read_text())[
        "components"
    ]["schemas"]
    tools = {tool.name: tool for tool in listed_tools()}
    for name, component in OPENAPI_INPUTS.items():
        expected, schema = components[component], tools[name].input_schema
        assert set(schema["required"]) == set(expected["required"]), name
        assert set(schema["properties"]) == set(expected["properties"]), name
        assert schema["additionalProperties"] is False
        for field, spec in expected["properties"].items():
            mine = schema["properties"][field]
            for key in LIMIT_KEYS:
                assert mine.get(key) == spec.get(key), (name, field, key)
            if spec.get("nullable"):
                assert "null" in mine["type"], (name, field)
    assert (
        tools["search_memory"].input_schema["properties"]["mode"]["enum"]
        == (components["SearchModeEnum"]["enum"])
    )
    citation = components["MemoryCitationSchemaRequest"]
    mine = tools["get_memory_entry"].input_schema["properties"]["citation"]
    assert set(mine["required"]) == set(citation["required"])


# -- every tool over Streamable HTTP, against the HTTP API ------------------------------


def run(coroutine):
    return asyncio.run(coroutine)


def http_error(call_api) -> dict:
    """The HTTP API's error body for a failing call, rebuilt from the client's error."""
    with pytest.raises(errors.PowerContextError) as raised:
        call_api()
    error = raised.value
    return {"error": {"code": error.code, "message": error.message, "details": error.details}}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_memory_tools_over_http_match_the_http_api(live_url, pc, mode):
    async def scenario():
        async with http_client(live_url, mode=mode) as mcp:
            assert [t.name for t in (await mcp.list_tools()).tools] == EXPECTED_TOOLS

            failed, written = await call(
                mcp, "remember_memory", {"scope_id": SCOPE, "kind": "decision", "text": "Use uv."}
            )
            assert not failed
            entry = written["entry"]
            # The same write over HTTP is the decision table's no-op, on the same head.
            assert pc.remember_memory(scope_id=SCOPE, kind="decision", text="Use uv.") == {
                "memory": written["memory"],
                "entry": None,
            }
            failed, same = await call(
                mcp, "remember_memory", {"scope_id": SCOPE, "kind": "decision", "text": "Use uv."}
            )
            assert (failed, same) == (
                False,
                {"memory": written["memory"], "entry": None},
            )

            search = {"scope_id": SCOPE, "query": "which package tool, uv?", "limit": 5}
            assert await call(mcp, "search_memory", search) == (False, pc.search_memory(**search))
            listing = {"scope_id": SCOPE, "include_inactive": True}
            assert await call(mcp, "list_memory_entries", listing) == (
                False,
                pc.list_memory_entries(**listing),
            )
            get = {"scope_id": SCOPE, "citation": entry["citation"]}
            assert await call(mcp, "get_memory_entry", get) == (False, pc.get_memory_entry(**get))
            assert (await call(mcp, "get_memory_entry", get))[1] == entry

            failed, revised = await call(
                mcp,
                "revise_memory_entry",
                {**get, "kind": "decision", "text": "Use uv, pinned.", "reason": "pin"},
            )
            assert not failed
            assert (
                pc.get_memory_entry(scope_id=SCOPE, citation=revised["entry"]["citation"])
                == revised["entry"]
            )

            # Revising from the superseded citation: the same conflict both ways.
            stale = {**get, "kind": "decision", "text": "Use pip."}
            assert await call(mcp, "revise_memory_entry", stale) == (
                True,
                http_error(lambda: pc.revise_memory_entry(**stale)),
            )

            current = {"scope_id": SCOPE, "citation": revised["entry"]["citation"]}
            failed, retired = await call(mcp, "retire_memory_entry", current)
            assert not failed
            assert retired["entry"]["state"] == "inactive"
            assert (
                pc.memory_changes(scope_id=SCOPE, since_revision=0)["revisions"][-1]["changes"][0][
                    "op"
                ]
                == "deactivate"
            )
            # Retiring it again: memory_entry_inactive both ways.
            assert await call(mcp, "retire_memory_entry", current) == (
                True,
                http_error(lambda: pc.retire_memory_entry(**current)),
            )

    run(scenario())


ERROR_CASES = [
    # (tool, arguments, client method): the HTTP API's answer is the expectation.
    ("search_memory", {"scope_id": SCOPE, "query": "x", "mode": "vector"}, "search_memory"),
    ("search_memory", {"scope_id": " ", "query": "x", "limit": 51}, "search_memory"),
    ("search_memory", {"scope_id": SCOPE, "query": "x", "limit": "10"}, "search_memory"),
    ("search_memory", {"scope_id": SCOPE}, None),
    ("search_memory", {"scope_id": SCOPE, "query": "x", "bogus": 1}, None),
    (
        "remember_memory",
        {"scope_id": SCOPE, "kind": "n", "text": "é" * 4097},
        "remember_memory",
    ),
    (
        "remember_memory",
        {"scope_id": SCOPE, "kind": "n", "text": "t", "expected_revision": 5},
        "remember_memory",
    ),
    (
        "list_memory_entries",
        {"scope_id": SCOPE, "cursor": "garbage"},
        "list_memory_entries",
    ),
    (
        "get_memory_entry",
        {
            "scope_id": SCOPE,
            "citation": {
                "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 9},
                "entry_id": "mem_ent_x",
                "entry_version_id": "mem_ver_x",
            },
        },
        "get_memory_entry",
    ),
    (
        "retire_memory_entry",
        {"scope_id": SCOPE, "citation": {"entry_id": "mem_ent_x"}},
        "retire_memory_entry",
    ),
]


def raw_http_error(live_url: str, tool: str, arguments: dict) -> dict:
    """The HTTP API's answer to the same body (for bodies the typed client cannot send)."""
    paths = {"search_memory": "/v1/memory/search"}
    response = httpx.post(live_url + paths[tool], json=arguments, timeout=10)
    assert response.status_code == 422
    return response.json()


def test_errors_over_http_match_the_http_api(live_url, pc):
    async def scenario():
        async with http_client(live_url) as mcp:
            for tool, arguments, method in ERROR_CASES:
                if method is None:
                    expected = raw_http_error(live_url, tool, arguments)
                else:
                    expected = http_error(lambda: getattr(pc, method)(**arguments))  # noqa: B023
                assert await call(mcp, tool, arguments) == (True, expected), (tool, arguments)

    run(scenario())


def test_an_unexpected_failure_is_an_internal_error_without_details(live_url, monkeypatch):
    from memory import selectors

    def broken(**kwargs):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(selectors, "memory_search", broken)

    async def scenario():
        async with http_client(live_url) as mcp:
            return await call(mcp, "search_memory", {"scope_id": SCOPE, "query": "x"})

    assert run(scenario()) == (
        True,
        {"error": {"code": "internal_error", "message": "Internal error.", "details": None}},
    )


def test_experience_tools_over_http(live_url):
    reviewer = get_user_model().objects.create_superuser("reviewer", password=None)
    source_capture(scope_id=SCOPE, source_id="turn-7", content="CI failed again.")
    proposal = {
        "situation": "CI failed on a fresh clone.",
        "action": "Ran the migrations before the tests.",
        "outcome": "CI passed.",
        "lesson": "Migrate before testing on a fresh clone.",
    }
    arguments = {
        "scope_id": SCOPE,
        "proposal": proposal,
        "source_refs": [{"name": "content", "source_id": "turn-7"}],
        "reason": "recurring",
    }

    async def scenario():
        async with http_client(live_url) as mcp:
            failed, candidate = await call(mcp, "propose_experience", arguments)
            assert not failed
            assert (candidate["status"], candidate["version"]) == ("pending", 1)
            assert candidate["proposal"] == proposal
            # No evidence: the serializer's error, as over HTTP.
            no_refs = {"scope_id": SCOPE, "proposal": proposal}
            assert await call(mcp, "propose_experience", no_refs) == (
                True,
                {
                    "error": {
                        "code": "invalid_request",
                        "message": "The request is invalid.",
                        "details": {
                            "errors": [
                                {
                                    "field": "source_refs",
                                    "message": "A proposal needs at least one source or "
                                    "artifact reference.",
                                }
                            ]
                        },
                    }
                },
            )
            return candidate

    candidate = run(scenario())
    approved = experience_services.candidate_approve(
        scope_id=SCOPE,
        candidate_id=candidate["candidate_id"],
        expected_version=1,
        reviewer=reviewer,
    )
    artifact = approved.result_artifact.as_payload()

    async def fetch():
        async with http_client(live_url) as mcp:
            found = await call(mcp, "get_experience", {"scope_id": SCOPE, "artifact": artifact})
            missing = await call(
                mcp,
                "get_experience",
                {"scope_id": SCOPE, "artifact": {**artifact, "revision": 2}},
            )
            return found, missing

    found, missing = run(fetch())
    assert found == (
        False,
        {
            "artifact": artifact,
            "content": proposal,
            "source_refs": arguments["source_refs"],
            "artifact_refs": [],
        },
    )
    assert missing[0] is True
    assert missing[1]["error"]["code"] == "artifact_not_found"


def test_experience_tools_match_the_http_api(live_url, pc):
    proposal = {"situation": "s", "action": "a", "outcome": "o", "lesson": "l"}
    refs = [{"name": "content", "source_id": "t"}]
    pc.capture_content_source(scope_id=SCOPE, source_id="t", content="a prompt")

    async def scenario():
        async with http_client(live_url) as mcp:
            failed, candidate = await call(
                mcp,
                "propose_experience",
                {"scope_id": SCOPE, "proposal": proposal, "source_refs": refs},
            )
            assert not failed
            over_http = pc.propose_experience(scope_id=SCOPE, proposal=proposal, source_refs=refs)
            strip = lambda c: {**c, "candidate_id": None}  # noqa: E731
            assert strip(candidate) == strip(over_http)
            assert (
                pc.get_artifact_candidate(scope_id=SCOPE, candidate_id=candidate["candidate_id"])
                == candidate
            )
            missing = {
                "scope_id": SCOPE,
                "artifact": {
                    "family": "experience",
                    "artifact_id": "exp_" + "0" * 32,
                    "revision": 1,
                },
            }
            assert await call(mcp, "get_experience", missing) == (
                True,
                http_error(lambda: pc.get_experience(**missing)),
            )

    run(scenario())


# -- who may call /mcp -----------------------------------------------------------------


def test_mcp_needs_the_bearer_token_when_one_is_set(live_url, settings):
    settings.POWERCONTEXT_API_TOKEN = TOKEN
    response = httpx.post(
        live_url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == "unauthorized"
    assert response.headers["X-PowerContext-Request-ID"]

    async def with_token():
        async with http_client(live_url, TOKEN) as mcp:
            return await call(mcp, "list_memory_entries", {"scope_id": SCOPE})

    assert run(with_token()) == (False, {"memory": None, "entries": [], "next_cursor": None})


def raw_post(url: str, path: str, body: dict, authorization: str) -> tuple[int, dict]:
    """POST with the Authorization header exactly as given (an HTTP library may refuse or
    trim a value that ends in a space; an agent's MCP client sends one)."""
    import http.client
    import json
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("POST", path)
        data = json.dumps(body).encode()
        for name, value in (
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Content-Length", str(len(data))),
            ("Authorization", authorization),
        ):
            connection.putheader(name, value)
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


# What Claude Code sends from the plugin's ``Bearer ${POWERCONTEXT_API_TOKEN:-}`` when the
# variable is unset (with or without the space, depending on the HTTP stack).
EMPTY_BEARERS = ["Bearer ", "Bearer", "bearer   "]


@pytest.mark.parametrize("authorization", EMPTY_BEARERS)
def test_an_empty_bearer_is_no_credential_without_a_configured_token(live_url, authorization):
    """No token configured: ``Bearer`` with nothing after it is the same as no header, so
    the MCP tools (writes and reads) and the HTTP API work with the plugin's defaults."""
    remember = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "remember_memory",
            "arguments": {"scope_id": SCOPE, "kind": "convention", "text": "make check."},
        },
    }
    status, body = raw_post(live_url, "/mcp", remember, authorization)
    assert status == 200, body
    assert body["result"]["isError"] is False, body
    search = {**remember, "id": 2}
    search["params"] = {"name": "search_memory", "arguments": {"scope_id": SCOPE, "query": "check"}}
    status, body = raw_post(live_url, "/mcp", search, authorization)
    assert status == 200, body
    assert body["result"]["isError"] is False, body
    assert body["result"]["structuredContent"]["hits"], body
    status, body = raw_post(
        live_url, "/v1/memory/search", {"scope_id": SCOPE, "query": "check"}, authorization
    )
    assert status == 200, body
    assert body["hits"]


@pytest.mark.parametrize("authorization", EMPTY_BEARERS)
def test_an_empty_bearer_is_still_a_401_when_a_token_is_configured(
    live_url, settings, authorization
):
    settings.POWERCONTEXT_API_TOKEN = TOKEN
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for path, body in (("/mcp", listing), ("/v1/memory/search", {"scope_id": SCOPE, "query": "x"})):
        status, answer = raw_post(live_url, path, body, authorization)
        assert status == 401, (path, answer)
        assert answer["error"]["code"] == "unauthorized"


def test_without_a_token_only_local_hosts_and_origins_are_served(live_url):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({"Host": "attacker.example"}, {"Origin": "http://attacker.example"}):
        response = httpx.post(live_url + "/mcp", json=body, headers={**accept, **headers})
        assert response.status_code == 403, headers
        assert response.json()["error"]["code"] == "permission_denied"
    local = httpx.post(
        live_url + "/mcp", json=body, headers={**accept, "Origin": "http://localhost:3000"}
    )
    assert local.status_code != 403


def test_only_post_is_served_at_mcp(live_url):
    for method in ("GET", "DELETE"):
        response = httpx.request(
            method, live_url + "/mcp", headers={"Accept": "text/event-stream"}, timeout=10
        )
        assert response.status_code == 405, method
        assert response.headers["Allow"] == "POST"
        assert response.json()["error"]["code"] == "method_not_allowed"
    # Only the exact path is MCP's; anything else is Django's.
    assert httpx.post(live_url + "/mcp/", json={}, timeout=10).json()["error"]["code"] == (
        "not_found"
    )


def test_propose_tool_refuses_a_source_never_captured_as_http_does(live_url, pc):
    proposal = {"situation": "s", "action": "a", "outcome": "o", "lesson": "l"}
    arguments = {
        "scope_id": SCOPE,
        "proposal": proposal,
        "source_refs": [{"name": "content", "source_id": "never-captured"}],
    }

    async def scenario():
        async with http_client(live_url) as mcp:
            return await call(mcp, "propose_experience", arguments)

    failed, body = run(scenario())
    assert failed
    assert body["error"]["details"]["errors"][0]["field"] == "source_refs.0"
    assert body == http_error(lambda: pc.propose_experience(**arguments))


def test_a_write_tool_says_what_it_redacted_in_meta_not_in_the_body(live_url):
    # The body is the HTTP operation's (no ``redacted`` member); ``_meta`` says it, as the
    # HTTP answer's PowerContext-Redacted header does.
    token = "ghp_" + "R7kPq2Wm9Xv4Ls8Tn3Yb6Hc1Jd5Fg0Aa2Bb3"

    async def scenario():
        async with http_client(live_url) as mcp:
            leaked = await mcp.call_tool(
                "remember_memory",
                {"scope_id": SCOPE, "kind": "note", "text": f"The CI token is {token}."},
            )
            clean = await mcp.call_tool(
                "remember_memory", {"scope_id": SCOPE, "kind": "note", "text": "Use uv."}
            )
            read = await mcp.call_tool("search_memory", {"scope_id": SCOPE, "query": "uv"})
            return leaked, clean, read

    leaked, clean, read = run(scenario())
    assert leaked.meta == {"powercontext/redacted": "1; kinds=github-token"}
    assert "redacted" not in leaked.structured_content
    assert token not in leaked.structured_content["entry"]["text"]
    assert clean.meta == {"powercontext/redacted": "0"}
    assert not read.meta


# -- MCP 2026-07-28 (no handshake: server/discover, then each request carries its version)


def modern_post(url: str, method: str, params: dict | None = None) -> httpx.Response:
    """A 2026-07-28 request as Copilot CLI 1.0.102 sends it: the version and the method in
    headers and in the request's ``_meta``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "copilot-cli", "version": "1.0.102"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return httpx.post(
        url + "/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": {**(params or {}), "_meta": meta},
        },
        headers={
            "Accept": "text/event-stream, application/json",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
        },
        timeout=5,
    )


def test_a_modern_client_is_told_there_is_nothing_to_listen_for(live_url):
    """``subscriptions/listen`` would be a stream that never ends, buffered on a worker
    thread: discover advertises no list changes, listen is refused at once, and refusing
    it holds no thread (the server has four: six listens, then it still answers)."""
    discovered = modern_post(live_url, "server/discover")
    assert discovered.status_code == 200, discovered.text
    capabilities = discovered.json()["result"]["capabilities"]
    assert capabilities["tools"].get("listChanged") in (None, False), capabilities
    assert "2026-07-28" in discovered.json()["result"]["supportedVersions"]
    for _ in range(6):
        refused = modern_post(
            live_url, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
        )
        assert refused.json()["error"]["code"] == -32601, refused.text  # Method not found
    listed = modern_post(live_url, "tools/list")
    assert [tool["name"] for tool in listed.json()["result"]["tools"]] == EXPECTED_TOOLS
