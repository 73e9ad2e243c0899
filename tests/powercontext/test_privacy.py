"""Logs never contain a query, prompt, memory text, scope id or citation (DESIGN.md §6,
RFC 0028 "Persistence and privacy").

Every operation, and an error of each kind, runs with distinctive markers in every field a
caller controls. Meanwhile everything the process logs is captured: a handler on the root
logger (at DEBUG) and on every logger that exists, since the settings stop some loggers
from propagating, plus the process's own stdout and stderr. None of it may contain a
marker or an id of an entry, entry version, candidate or Experience.

Twice: in this process, through the production WSGI application and server class (the
suite's ``live_url``, so a failure can be injected), and against a real ``manage.py
serve`` process, whose logging is configured by the production settings alone.
"""

import http.client
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.admin.utils import quote

from tests.client import conftest as client_fixtures
from tests.experience.servers import AGENT_TOKEN, REPO_ROOT, START_TIMEOUT, environment, manage

# The production WSGI application and server class, in a thread of this process.
live_url = client_fixtures.live_url

MARK = "zqxmark"
SCOPE = f"scope-{MARK}scope"
IDS = re.compile(r"(mem_ent_|mem_ver_|cand_|exp_)[0-9a-f]{32}")
READY = re.compile(r"PowerContext serving on (http://127\.0\.0\.1:\d+/) ")
FORM = "application/x-www-form-urlencoded"
# The served process's body limit: small, so that a body over 4 times it (which waitress
# refuses before the application sees it) is cheap to send.
SERVED_BODY_LIMIT = 64 * 1024


class Http:
    """Plain HTTP to a served PowerContext: any method, any body, raw bytes back."""

    def __init__(self, base_url: str):
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port

    def request(
        self, method, path, body=None, *, token=AGENT_TOKEN, raw=None, ctype=None, headers=None
    ):
        headers = dict(headers or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        if data is not None:
            headers["Content-Type"] = ctype or "application/json"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def post(self, path, body=None, *, status=200, **kwargs):
        code, content = self.request("POST", path, body, **kwargs)
        assert code == status, (path, code, content[:500])
        return json.loads(content)

    def error(self, method, path, body=None, *, status, code, **kwargs):
        got, content = self.request(method, path, body, **kwargs)
        assert got == status, (path, got, content[:500])
        if code is not None:
            assert json.loads(content)["error"]["code"] == code, (path, content[:500])


def marked(what: str) -> str:
    return f"{MARK}{what}"


def run_every_operation(
    api: Http, reviewer_token: str, body_limit: int, *, in_process: bool = True
) -> list[str]:
    """Every operation, with markers everywhere a caller can put text, then an error of
    each kind. Returns the ids the server handed out (none may be logged). A server in
    this process (``in_process``) also refuses a vector search with its channel off."""
    ids: list[str] = []
    assert api.request("GET", "/health/live", token=None)[0] == 200
    assert api.request("GET", "/health/ready", token=None)[0] == 200
    assert api.request("GET", "/v1/capabilities")[0] == 200

    source = {
        "scope_id": SCOPE,
        "source_id": marked("source"),
        "content": marked("prompt") + " please fix the deploy pipeline",
        "metadata": {"session": marked("session")},
    }
    api.post("/v1/sources/content", source, status=202)

    def remember(text, **extra):
        body = {"scope_id": SCOPE, "kind": marked("kind"), "text": text, **extra}
        return api.post("/v1/memory/remember", body)

    first = remember(marked("text") + " the deploy pipeline runs on Fridays", reason=marked("r"))
    citation = first["entry"]["citation"]
    long_text = marked("longtext") + " deploy pipeline " + "é" * 3000
    remember(long_text)
    api.post(
        "/v1/memory/search",
        {"scope_id": SCOPE, "query": marked("query") + " deploy pipeline", "limit": 5},
    )
    listed = api.post("/v1/memory/entries/list", {"scope_id": SCOPE, "include_inactive": True})
    ids += [entry["citation"]["entry_id"] for entry in listed["entries"]]
    api.post("/v1/memory/entries/get", {"scope_id": SCOPE, "citation": citation})
    revised = api.post(
        "/v1/memory/entries/revise",
        {
            "scope_id": SCOPE,
            "citation": citation,
            "kind": marked("kind2"),
            "text": marked("revised") + " deploy pipeline on Thursdays",
            "reason": marked("why"),
        },
    )["entry"]["citation"]
    retired = api.post(
        "/v1/memory/entries/retire",
        {"scope_id": SCOPE, "citation": revised, "reason": marked("retire")},
    )["entry"]["citation"]
    api.post(
        "/v1/memory/entries/reactivate",
        {"scope_id": SCOPE, "citation": retired, "reason": marked("back")},
    )
    api.post("/v1/memory/changes", {"scope_id": SCOPE, "since_revision": 0})
    ids += [c["entry_version_id"] for c in (citation, revised, retired)]

    prompt = marked("prompt") + " why does the deploy pipeline fail?"
    prepared = api.post("/v1/context/prepare", {"scope_id": SCOPE, "query": prompt})
    # The markers really went through: the pack quotes the marked memory.
    assert prepared["status"] == "ready"
    assert MARK in prepared["content"]

    def propose(lesson):
        body = {
            "scope_id": SCOPE,
            "proposal": {
                "situation": marked("situation") + " the deploy pipeline failed",
                "action": marked("action"),
                "outcome": marked("outcome"),
                "lesson": lesson,
            },
            "source_refs": [{"name": "content", "source_id": marked("source")}],
            "reason": marked("because"),
        }
        return api.post("/v1/experience/propose", body, status=201)

    candidate = propose(marked("lesson") + " check the deploy pipeline first")
    key = {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"]}
    api.post("/v1/artifact-candidates/list", {"scope_id": SCOPE})
    api.post("/v1/artifact-candidates/get", {**key, "expected_version": 1})
    reviewer = {"token": reviewer_token}
    revised_candidate = api.post(
        "/v1/artifact-candidates/revise",
        {
            **key,
            "expected_version": 1,
            "proposal": {
                "situation": marked("situation2") + " deploy pipeline",
                "action": marked("action2"),
                "outcome": marked("outcome2"),
                "lesson": marked("lesson2") + " deploy pipeline",
            },
            "reason": marked("edit"),
        },
        **reviewer,
    )
    approved = api.post(
        "/v1/artifact-candidates/approve",
        {**key, "expected_version": revised_candidate["version"]},
        **reviewer,
    )
    artifact = approved["result_artifact"]
    api.post("/v1/experience/get", {"scope_id": SCOPE, "artifact": artifact})
    other = propose(marked("lesson3"))
    api.post(
        "/v1/artifact-candidates/reject",
        {
            "scope_id": SCOPE,
            "candidate_id": other["candidate_id"],
            "expected_version": 1,
            "reason": marked("reject"),
        },
        **reviewer,
    )
    ids += [candidate["candidate_id"], other["candidate_id"], artifact["artifact_id"]]
    again = api.post("/v1/context/prepare", {"scope_id": SCOPE, "query": prompt, "max_bytes": 512})
    assert again["status"] in ("ready", "empty")
    assert api.request("GET", "/metrics")[0] == 200
    # The admin's URLs hold ids: anonymous, refused (login redirect, CSRF failure).
    admin = f"/admin/experience/candidate/{quote(candidate['candidate_id'])}/"
    assert api.request("GET", admin + f"change/?q={MARK}", token=None)[0] == 302
    refused = api.request("POST", admin + "approve/", raw=b"a=1", ctype=FORM, token=None)
    assert refused[0] == 403

    # -- an error of each kind, markers included --
    search = {"scope_id": SCOPE, "query": marked("query")}
    for token in (None, "wrong-" + marked("token")):
        api.error("POST", "/v1/memory/search", search, token=token, status=401, code="unauthorized")
    api.error("GET", "/metrics", token=None, status=401, code="unauthorized")
    api.error(
        "POST",
        "/v1/artifact-candidates/approve",
        {**key, "expected_version": 1},
        status=403,
        code="permission_denied",
    )
    unknown = {**citation, "entry_version_id": "mem_ver_" + "0" * 32}
    api.error(
        "POST",
        "/v1/memory/entries/get",
        {"scope_id": SCOPE, "citation": unknown},
        status=404,
        code="memory_not_found",
    )
    api.error(
        "POST",
        "/v1/artifact-candidates/get",
        {"scope_id": SCOPE, "candidate_id": "cand_" + "0" * 32},
        status=404,
        code="candidate_not_found",
    )
    api.error(
        "POST",
        "/v1/experience/get",
        {"scope_id": SCOPE, "artifact": {**artifact, "revision": 99}},
        status=404,
        code="artifact_not_found",
    )
    api.error("POST", f"/v1/{marked('path')}/x", search, status=404, code="not_found")
    api.error("GET", f"/v1/memory/remember?scope_id={SCOPE}", status=405, code="method_not_allowed")
    api.error(
        "POST",
        "/v1/memory/entries/revise",
        {"scope_id": SCOPE, "citation": citation, "kind": "k", "text": marked("stale")},
        status=409,
        code="revision_conflict",
    )
    api.error(
        "POST",
        "/v1/sources/content",
        {**source, "content": marked("different")},
        status=409,
        code="source_conflict",
    )
    api.error(
        "POST",
        "/v1/artifact-candidates/approve",
        {**key, "expected_version": revised_candidate["version"]},
        token=reviewer_token,
        status=409,
        code="candidate_terminal",
    )
    api.error(
        "POST",
        "/v1/memory/search",
        {**search, "query": "   ", marked("field"): marked("value")},
        status=422,
        code="invalid_request",
    )
    api.error(
        "POST",
        "/v1/memory/search",
        raw=('{"scope_id": "' + SCOPE + '", "query": "' + marked("broken")).encode(),
        status=422,
        code="invalid_request",
    )
    # Vector search with the semantic channel off: refused, one more error path to log.
    # (Only a server in this process sees the switch; a served one searches by meaning.)
    if in_process:
        previous = os.environ.get("POWERCONTEXT_EMBEDDINGS")
        os.environ["POWERCONTEXT_EMBEDDINGS"] = "off"
        try:
            api.error(
                "POST",
                "/v1/memory/search",
                {**search, "mode": "vector"},
                status=422,
                code="capability_not_supported",
            )
        finally:
            if previous is None:
                os.environ.pop("POWERCONTEXT_EMBEDDINGS")
            else:
                os.environ["POWERCONTEXT_EMBEDDINGS"] = previous
    else:
        api.post("/v1/memory/search", {**search, "mode": "vector"})
    api.error(
        "POST",
        "/v1/memory/search",
        raw=json.dumps(search).encode(),
        ctype="text/plain",
        status=415,
        code="unsupported_media_type",
    )
    oversized = json.dumps({**search, "query": marked("huge") * (body_limit // 10)}).encode()
    assert body_limit < len(oversized) < 4 * body_limit  # refused by the middleware
    api.error(
        "POST",
        "/v1/memory/search",
        raw=oversized,
        status=413,
        code="payload_too_large",
    )
    return ids


def mcp_calls(api: Http) -> None:
    """The MCP tools at /mcp, with markers, including a refused call. Plain JSON-RPC: an
    MCP client library would log the arguments itself, on this side."""
    accept = {"Accept": "application/json, text/event-stream"}

    def rpc(method, params, request_id):
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        status, content = api.request("POST", "/mcp", body, headers=accept)
        assert status == 200, content[:500]
        return json.loads(content)["result"]

    rpc(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "privacy-test", "version": "1"},
        },
        1,
    )
    calls = [
        ("search_memory", {"scope_id": SCOPE, "query": marked("mcpquery")}, False),
        ("remember_memory", {"scope_id": SCOPE, "kind": "k", "text": marked("mcptext")}, False),
        ("search_memory", {"scope_id": SCOPE, "query": " ", marked("f"): marked("v")}, True),
        (marked("tool"), {"scope_id": SCOPE}, True),
    ]
    for index, (tool, arguments, is_error) in enumerate(calls, start=2):
        result = rpc("tools/call", {"name": tool, "arguments": arguments}, index)
        assert bool(result.get("isError")) is is_error, result


def assert_private(text: str, ids: list[str]) -> None:
    assert MARK not in text, _around(text, text.find(MARK))
    found = IDS.search(text)
    assert found is None, _around(text, found.start())
    for value in ids:
        assert value not in text


def _around(text: str, at: int) -> str:
    return text[max(at - 300, 0) : at + 300]


class CaptureAll(logging.Handler):
    """Every record any logger emits, formatted with its exception and stack."""

    def __init__(self):
        super().__init__(level=logging.NOTSET)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self.lines: list[str] = []
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.lines.append(self.format(record))
        self.records.append(record)


@pytest.fixture
def all_logs():
    handler = CaptureAll()
    root = logging.getLogger()
    loggers = [root] + [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    previous_level = root.level
    root.setLevel(logging.DEBUG)
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)
    root.setLevel(previous_level)


def test_no_log_record_or_output_names_caller_data(
    live_url, settings, monkeypatch, all_logs, capfd
):
    from django.contrib.auth import get_user_model

    from experience import services

    settings.POWERCONTEXT_API_TOKEN = AGENT_TOKEN
    # A superuser: a flush by an earlier transactional test removes the reviewer group.
    get_user_model().objects.create_superuser("rita", password=None)
    reviewer_token = services.reviewer_token_issue(username="rita").token
    api = Http(live_url)

    ids = run_every_operation(api, reviewer_token, settings.POWERCONTEXT_MAX_BODY_BYTES)
    mcp_calls(api)

    # 500: a failure whose message quotes the caller's data, as a database error might.
    def failing(*, scope_id, query, **_):
        raise RuntimeError(f"the index choked on {query.terms!r} in {scope_id!r}")

    monkeypatch.setattr("contextpack.application.memory_search_at", failing)
    api.error(
        "POST",
        "/v1/context/prepare",
        {"scope_id": SCOPE, "query": marked("prompt")},
        status=500,
        code="internal_error",
    )

    captured = capfd.readouterr()
    logged = "\n".join(all_logs.lines)
    # The capture works: the access log and the internal error were seen.
    assert "POST /v1/context/prepare 200" in logged
    assert "internal error RuntimeError" in logged
    for text in (logged, captured.out, captured.err):
        assert_private(text, ids)


def test_a_server_side_domain_error_is_logged_by_its_type_alone(
    live_url, settings, monkeypatch, all_logs
):
    # A broken invariant of the service layer (a PowerContextError of status 500) must
    # reach the operator's log like any other internal error, over HTTP and over MCP.
    from memory import selectors

    def inconsistent(**_):
        raise selectors.SearchInconsistent()

    settings.POWERCONTEXT_API_TOKEN = AGENT_TOKEN
    monkeypatch.setattr(selectors, "memory_search", inconsistent)
    api = Http(live_url)
    arguments = {"scope_id": SCOPE, "query": marked("query")}
    api.error("POST", "/v1/memory/search", arguments, status=500, code="internal_error")
    accept = {"Accept": "application/json, text/event-stream"}
    call = {"name": "search_memory", "arguments": arguments}
    status, content = api.request(
        "POST",
        "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
        headers=accept,
    )
    assert status == 200, content[:500]
    result = json.loads(content)["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "internal_error"

    # One record per failed call, on the errors logger (all_logs sees each record once per
    # logger it passes through); the type and the frames, nothing of the request.
    records = [r for r in all_logs.records if r.name == "powercontext.errors"]
    assert len(set(map(id, records))) == 2, all_logs.lines
    for record in records:
        assert record.levelno == logging.ERROR
        assert record.getMessage().startswith("internal error SearchInconsistent\n")
    assert_private("\n".join(all_logs.lines), [])


@pytest.mark.slow
def test_a_served_process_logs_no_caller_data(tmp_path, transactional_db):
    home = tmp_path / "home"
    home.mkdir()
    env = environment(home)  # on OceanBase: a database of its own, on the suite's server
    env["POWERCONTEXT_MAX_BODY_BYTES"] = str(SERVED_BODY_LIMIT)
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", "0"],
            cwd=REPO_ROOT,
            env=env,
            stdout=stdout,
            stderr=stderr,
        )
    try:
        base_url = _wait_until_serving(process, out)  # and migrated
        reviewer_token = manage(home, "reviewer_token", "rita", "--create").strip()
        api = Http(base_url)
        ids = run_every_operation(api, reviewer_token, SERVED_BODY_LIMIT, in_process=False)
        mcp_calls(api)
        # Far over the limit: waitress's own 413, before the body is read.
        status, _ = api.request("POST", "/v1/memory/search", raw=b"x" * (5 * SERVED_BODY_LIMIT))
        assert status == 413
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    logged_out, logged_err = out.read_text(), err.read_text()
    assert "POST /v1/context/prepare 200" in logged_err  # the access log is there
    assert "POST /mcp 200" in logged_err
    for text in (logged_out, logged_err):
        assert_private(text, ids)


def _wait_until_serving(process: subprocess.Popen, out: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        found = READY.search(out.read_text())
        if found:
            return found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    pytest.fail(f"serve did not start: {out.read_text()}")
