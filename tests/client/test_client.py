"""The Python client against a live server: every Memory operation, and every error type
raised for real (synchronous client; ``test_async_client.py`` does the same for async)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from memory import selectors
from powercontext_client import (
    CapabilityNotSupported,
    Conflict,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    PowerContextClient,
    PowerContextError,
    ServerError,
    Timeout,
    Unauthorized,
    Unavailable,
    UnexpectedResponse,
)

from .conftest import SCOPE

TOKEN = "client-test-token-0123456789abcdef"


def test_system_operations(pc):
    assert pc.health_live()["status"] == "live"
    assert pc.health_ready()["status"] == "ready"
    capabilities = pc.capabilities()
    assert capabilities["source_types"] == ["content"]
    assert "memory" in capabilities["artifact_families"]


def test_memory_lifecycle(pc):
    first = pc.remember_memory(
        scope_id=SCOPE, kind="decision", text="  Deploys go through the blue-green pipeline.  "
    )
    entry = first["entry"]
    assert entry is not None
    assert entry["text"] == "Deploys go through the blue-green pipeline."
    assert first["memory"]["revision"] == 1
    # The decision table: the same text again is a no-op.
    again = pc.remember_memory(
        scope_id=SCOPE, kind="decision", text="Deploys go through the blue-green pipeline."
    )
    assert again == {
        "memory": first["memory"],
        "entry": None,
    }

    hits = pc.search_memory(scope_id=SCOPE, query="how do deploys work", limit=5)
    assert [hit["citation"] for hit in hits["hits"]] == [entry["citation"]]
    assert hits["mode"] == "hybrid"

    revised = pc.revise_memory_entry(
        scope_id=SCOPE,
        citation=entry["citation"],
        kind="decision",
        text="Deploys go through the canary pipeline.",
        reason="moved to canaries",
    )["entry"]
    assert revised["version"] == 2
    # The old citation still resolves exactly.
    assert pc.get_memory_entry(scope_id=SCOPE, citation=entry["citation"]) == entry

    retired = pc.retire_memory_entry(scope_id=SCOPE, citation=revised["citation"])
    assert retired["entry"]["state"] == "inactive"
    assert pc.list_memory_entries(scope_id=SCOPE)["entries"] == []
    listed = pc.list_memory_entries(scope_id=SCOPE, include_inactive=True, limit=10)
    assert [item["citation"]["entry_id"] for item in listed["entries"]] == [
        entry["citation"]["entry_id"]
    ]

    reactivated = pc.reactivate_memory_entry(scope_id=SCOPE, citation=retired["entry"]["citation"])
    assert reactivated["entry"]["state"] == "active"

    changes = pc.memory_changes(scope_id=SCOPE, since_revision=0)
    assert [r["changes"][0]["op"] for r in changes["revisions"]] == [
        "add",
        "revise",
        "deactivate",
        "reactivate",
    ]
    assert changes["next_since"] is None


def test_capture_and_prepare(pc):
    captured = pc.capture_content_source(
        scope_id=SCOPE, source_id="turn-1", content="a prompt", metadata={"turn": 1}
    )
    assert captured == {
        "status": "accepted",
        "source": {"name": "content", "source_id": "turn-1"},
        "position": 1,
    }
    # Idempotent by id: the same payload again answers the original position.
    assert (
        pc.capture_content_source(
            scope_id=SCOPE, source_id="turn-1", content="a prompt", metadata={"turn": 1}
        )
        == captured
    )

    assert pc.prepare_context(scope_id=SCOPE, query="deploys")["status"] == "empty"
    pc.remember_memory(scope_id=SCOPE, kind="note", text="Deploys need a change ticket.")
    prepared = pc.prepare_context(scope_id=SCOPE, query="deploys", max_bytes=4000)
    assert prepared["status"] == "ready"
    assert prepared["content_bytes"] == len(prepared["content"].encode())


# -- every error type, raised by the real server ----------------------------------------


def test_unauthorized_without_or_with_a_wrong_token(live_url, settings):
    settings.POWERCONTEXT_API_TOKEN = TOKEN
    for token in ("", "wrong-token"):
        with (
            PowerContextClient(live_url, token=token) as client,
            pytest.raises(Unauthorized) as raised,
        ):
            client.search_memory(scope_id=SCOPE, query="x")
        assert raised.value.code == "unauthorized"
        assert raised.value.status == 401
        assert raised.value.request_id
    with PowerContextClient(live_url, token=TOKEN) as client:
        assert client.search_memory(scope_id=SCOPE, query="x")["hits"] == []


def test_token_and_url_come_from_the_environment(live_url, settings, monkeypatch):
    settings.POWERCONTEXT_API_TOKEN = TOKEN
    monkeypatch.setenv("POWERCONTEXT_URL", live_url)
    monkeypatch.setenv("POWERCONTEXT_API_TOKEN", TOKEN)
    with PowerContextClient() as client:
        assert client.settings.base_url == live_url
        assert client.capabilities()["search_modes"] == ["auto", "fts", "vector", "hybrid"]


def test_not_found_codes(pc):
    written = pc.remember_memory(scope_id=SCOPE, kind="note", text="one")["entry"]
    citation = written["citation"]
    unknown_version = {**citation, "entry_version_id": "mem_ver_" + "0" * 32}
    with pytest.raises(NotFound) as raised:
        pc.get_memory_entry(scope_id=SCOPE, citation=unknown_version)
    assert (raised.value.code, raised.value.status) == ("memory_not_found", 404)

    future = {**citation, "memory_ref": {**citation["memory_ref"], "revision": 99}}
    with pytest.raises(NotFound) as raised:
        pc.get_memory_entry(scope_id=SCOPE, citation=future)
    assert raised.value.code == "artifact_not_found"


def test_conflict_codes(pc):
    entry = pc.remember_memory(scope_id=SCOPE, kind="note", text="first")["entry"]
    with pytest.raises(Conflict) as raised:
        pc.remember_memory(scope_id=SCOPE, kind="note", text="second", expected_revision=0)
    assert (raised.value.code, raised.value.status) == ("revision_conflict", 409)

    pc.revise_memory_entry(scope_id=SCOPE, citation=entry["citation"], kind="note", text="v2")
    with pytest.raises(Conflict) as raised:
        pc.retire_memory_entry(scope_id=SCOPE, citation=entry["citation"])
    assert raised.value.code == "revision_conflict"

    other = pc.remember_memory(scope_id=SCOPE, kind="note", text="other")["entry"]
    pc.retire_memory_entry(scope_id=SCOPE, citation=other["citation"])
    with pytest.raises(Conflict) as raised:
        pc.retire_memory_entry(scope_id=SCOPE, citation=other["citation"])
    assert raised.value.code == "memory_entry_inactive"

    pc.capture_content_source(scope_id=SCOPE, source_id="s-1", content="a")
    with pytest.raises(Conflict) as raised:
        pc.capture_content_source(scope_id=SCOPE, source_id="s-1", content="b")
    assert raised.value.code == "source_conflict"


def test_invalid_request_carries_field_errors(pc):
    with pytest.raises(InvalidRequest) as raised:
        pc.remember_memory(scope_id="x" * 257, kind="note", text="é" * 4097)
    error = raised.value
    assert (error.code, error.status) == ("invalid_request", 422)
    fields = dict(error.field_errors)
    assert set(fields) == {"scope_id", "text"}
    assert "8192 UTF-8 bytes" in fields["text"]

    with pytest.raises(InvalidRequest) as raised:
        pc.list_memory_entries(scope_id=SCOPE, cursor="not-a-cursor")
    assert raised.value.field_errors == [("cursor", "Invalid cursor.")]


def test_capability_not_supported(pc, monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    with pytest.raises(CapabilityNotSupported) as raised:
        pc.search_memory(scope_id=SCOPE, query="x", mode="vector")
    assert (raised.value.code, raised.value.status) == ("capability_not_supported", 422)
    assert not isinstance(raised.value, InvalidRequest)


def test_payload_too_large(pc, settings):
    settings.POWERCONTEXT_MAX_BODY_BYTES = 2048
    with pytest.raises(PayloadTooLarge) as raised:
        pc.capture_content_source(scope_id=SCOPE, source_id="big", content="x" * 4096)
    assert (raised.value.code, raised.value.status) == ("payload_too_large", 413)


def test_internal_error_is_a_server_error(pc, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(selectors, "memory_search", broken)
    with pytest.raises(ServerError) as raised:
        pc.search_memory(scope_id=SCOPE, query="x")
    assert (raised.value.code, raised.value.status) == ("internal_error", 500)
    assert "boom" not in str(raised.value)


def test_unavailable_when_nothing_listens(closed_port):
    started = time.monotonic()
    with PowerContextClient(f"http://127.0.0.1:{closed_port}", max_retries=1) as client:
        with pytest.raises(Unavailable) as raised:
            client.capabilities()
    assert raised.value.status is None
    assert raised.value.code == "unavailable"
    assert time.monotonic() - started < 5


def test_timeout_when_the_server_never_answers(silent_server):
    url, accepted = silent_server
    started = time.monotonic()
    with PowerContextClient(url, timeout=0.5) as client, pytest.raises(Timeout) as raised:
        client.search_memory(scope_id=SCOPE, query="x")
    assert isinstance(raised.value, Unavailable)
    assert time.monotonic() - started < 3
    # Timeouts are not retried, even for reads: one connection, one request.
    assert len(accepted) == 1


def test_a_callers_http_client_keeps_the_timeout(silent_server):
    url, _ = silent_server
    started = time.monotonic()
    with httpx.Client(timeout=30) as http, pytest.raises(Timeout):
        PowerContextClient(url, timeout=0.5, http_client=http).capabilities()
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    ("failure", "attempts"),
    [(httpx.ConnectTimeout, 2), (httpx.ReadTimeout, 1)],
    ids=["connect-timeout-retried", "read-timeout-not"],
)
def test_only_a_connect_timeout_is_retried(failure, attempts):
    calls = []

    def transport(request):
        calls.append(request.url.path)
        raise failure("no answer", request=request)

    http = httpx.Client(transport=httpx.MockTransport(transport))
    with PowerContextClient("http://pc.test", max_retries=1, http_client=http) as client:
        with pytest.raises(Timeout):
            client.capabilities()
    assert calls == ["/v1/capabilities"] * attempts


def test_a_non_api_answer_is_unexpected():
    with ScriptedServer([(200, b"<html>proxy</html>", "text/html")]) as url:
        with PowerContextClient(url) as client, pytest.raises(UnexpectedResponse):
            client.capabilities()


# -- retries: idempotent operations only ------------------------------------------------

NOT_READY = json.dumps(
    {"error": {"code": "runtime_not_ready", "message": "not ready", "details": None}}
).encode()
CAPABILITIES = json.dumps({"source_types": ["content"]}).encode()


class ScriptedServer:
    """Answers requests from a script of (status, body, content type), then repeats the
    last one; records the paths asked for."""

    def __init__(self, script):
        self.script = list(script)
        self.paths = []

    def __enter__(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.paths.append(self.path)
                status, body, content_type = (
                    outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                )
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc_info):
        self.server.shutdown()
        self.server.server_close()


def test_reads_are_retried_on_503_then_succeed():
    script = [(503, NOT_READY, "application/json")] * 2 + [(200, CAPABILITIES, "application/json")]
    scripted = ScriptedServer(script)
    with scripted as url, PowerContextClient(url, max_retries=2) as client:
        assert client.capabilities() == {"source_types": ["content"]}
    assert scripted.paths == ["/v1/capabilities"] * 3


def test_retries_are_bounded_and_end_in_unavailable():
    scripted = ScriptedServer([(503, NOT_READY, "application/json")])
    with scripted as url, PowerContextClient(url, max_retries=2) as client:
        with pytest.raises(Unavailable) as raised:
            client.search_memory(scope_id=SCOPE, query="x")
    assert raised.value.code == "runtime_not_ready"
    assert len(scripted.paths) == 3


def test_not_ready_is_an_answer_of_the_readiness_check_not_retried():
    not_ready = json.dumps({"status": "not_ready", "checks": {}}).encode()
    scripted = ScriptedServer([(503, not_ready, "application/json")])
    with scripted as url, PowerContextClient(url, max_retries=2) as client:
        assert client.health_ready()["status"] == "not_ready"
    assert scripted.paths == ["/health/ready"]


def test_writes_are_never_retried():
    scripted = ScriptedServer([(503, NOT_READY, "application/json")])
    with scripted as url, PowerContextClient(url, max_retries=5) as client:
        with pytest.raises(Unavailable):
            client.remember_memory(scope_id=SCOPE, kind="note", text="x")
        with pytest.raises(Unavailable):
            client.retire_memory_entry(
                scope_id=SCOPE,
                citation={
                    "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 1},
                    "entry_id": "e",
                    "entry_version_id": "v",
                },
            )
    assert scripted.paths == ["/v1/memory/remember", "/v1/memory/entries/retire"]


def test_every_error_is_a_powercontext_error():
    for error in (
        Unauthorized,
        NotFound,
        Conflict,
        InvalidRequest,
        CapabilityNotSupported,
        PayloadTooLarge,
        Unavailable,
        Timeout,
        ServerError,
        UnexpectedResponse,
    ):
        assert issubclass(error, PowerContextError)


def test_an_invalid_request_says_which_field_and_why(pc):
    with pytest.raises(InvalidRequest) as raised:
        pc.list_memory_entries(scope_id=SCOPE, cursor="not-a-cursor")
    assert str(raised.value) == (
        "invalid_request: The request is invalid. cursor: Invalid cursor. (HTTP 422)"
    )
    with pytest.raises(InvalidRequest) as raised:
        pc.remember_memory(scope_id="x" * 257, kind="note", text="é" * 4097)
    shown = str(raised.value)
    assert "scope_id: " in shown
    assert "text: " in shown
    assert "8192 UTF-8 bytes" in shown


def test_unavailable_says_which_url_it_tried(closed_port):
    with PowerContextClient(f"http://127.0.0.1:{closed_port}", max_retries=0) as client:
        with pytest.raises(Unavailable) as raised:
            client.capabilities()
    assert f"Cannot reach the server at http://127.0.0.1:{closed_port}/v1/" in str(raised.value)
