"""DNS rebinding and foreign pages: the Host and Origin rule on every route.

The rule itself, then Django's routes through the test client, then a real ``manage.py
serve`` process (127.0.0.1, port 0) addressed as a rebinding page would address it.
"""

import http.client
import json
import subprocess
import sys

import pytest

from server import origin_policy
from tests.server import test_serve
from tests.server.test_serve import READY, REPO_ROOT, START_TIMEOUT, _env

FOREIGN_HOSTS = ["attacker.example", "attacker.example:8000", "0.0.0.0:8000", "10.0.0.5"]
LOCAL_HOSTS = [
    "127.0.0.1",
    "127.0.0.1:8000",
    "localhost:9000",
    "LocalHost",
    "[::1]:8000",
    "127.3.4.5",
]
FOREIGN_ORIGINS = ["http://attacker.example", "http://attacker.example:8000", "null", "file://"]
LOCAL_ORIGINS = ["http://127.0.0.1:8000", "http://localhost:3000", "https://[::1]"]


# -- the rule -------------------------------------------------------------------------


@pytest.mark.parametrize("host", LOCAL_HOSTS)
def test_this_machines_names_are_served_on_any_port(host):
    assert origin_policy.refusal(host, None, []) is None


@pytest.mark.parametrize("host", [*FOREIGN_HOSTS, "a:b:c", "bad host"])
def test_other_hosts_are_refused(host):
    assert "Host must be loopback" in origin_policy.refusal(host, None, [])


@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
def test_a_foreign_origin_is_refused_even_when_host_is_loopback(origin):
    assert "Origin must be loopback" in origin_policy.refusal("127.0.0.1:8000", origin, [])


@pytest.mark.parametrize("origin", LOCAL_ORIGINS)
def test_a_local_origin_is_served(origin):
    assert origin_policy.refusal("127.0.0.1:8000", origin, []) is None


def test_no_host_header_is_served():
    # HTTP/1.0 clients; a browser always sends Host.
    assert origin_policy.refusal(None, None, []) is None


def test_listed_hosts_and_their_subdomains_are_served():
    allowed = origin_policy.parse_allowed_hosts(" pc.example.com , .team.example,")
    assert allowed == ["pc.example.com", ".team.example"]
    assert origin_policy.refusal("pc.example.com:443", "https://pc.example.com", allowed) is None
    assert origin_policy.refusal("a.team.example", "https://team.example", allowed) is None
    assert origin_policy.refusal("example.com", None, allowed) is not None


def test_the_bound_address_is_served(monkeypatch):
    monkeypatch.setattr(origin_policy, "_bound_hosts", set())
    assert origin_policy.refusal("192.168.1.5:8000", None, []) is not None
    origin_policy.allow_bound_host("192.168.1.5")
    origin_policy.allow_bound_host("0.0.0.0")  # noqa: S104  (a wildcard names no one)
    assert origin_policy.refusal("192.168.1.5:8000", None, []) is None
    assert origin_policy.refusal("0.0.0.0:8000", None, []) is not None


# -- every Django route, through the test client ----------------------------------------

ROUTES = [
    "/v1/capabilities",
    "/admin/login/",
    "/api/docs/",
    "/api/schema/",
    "/health/live",
    "/static/admin/css/base.css",
    "/no/such/route",
]


@pytest.mark.django_db
@pytest.mark.parametrize("route", ROUTES)
def test_every_route_refuses_a_foreign_host_and_origin(client, route):
    for headers in (
        {"HTTP_HOST": "attacker.example:8000"},
        {"HTTP_ORIGIN": "http://attacker.example:8000"},
    ):
        response = client.get(route, **headers)
        assert response.status_code == 403, (route, headers)
        assert response.json()["error"]["code"] == "permission_denied"
        assert response["X-PowerContext-Request-ID"]


@pytest.mark.django_db
def test_local_requests_are_served(client):
    response = client.get(
        "/v1/capabilities", HTTP_HOST="127.0.0.1:8000", HTTP_ORIGIN="http://127.0.0.1:8000"
    )
    assert response.status_code == 200


def test_listed_hosts_are_honoured_only_with_a_token(tmp_path):
    # settings.py decides at import; run it in a child with each environment.
    code = "from django.conf import settings; print(settings.POWERCONTEXT_ALLOWED_HOSTS)"
    for token, expected in (("t0ken", "['pc.example']"), ("", "[]")):
        env = _env(tmp_path, POWERCONTEXT_ALLOWED_HOSTS="pc.example", POWERCONTEXT_API_TOKEN=token)
        out = subprocess.run(
            [sys.executable, "-c", "import django; django.setup(); " + code],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
        assert out == expected, token


# -- a real server --------------------------------------------------------------------

MCP_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def _request(port, method, path, headers, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        # skip_host: send exactly the Host a rebinding page's browser would send.
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        data = body.encode() if body is not None else b""
        if body is not None:
            connection.putheader("Content-Type", "application/json")
            connection.putheader("Accept", "application/json, text/event-stream")
        connection.putheader("Content-Length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        connection.close()


REAL_ROUTES = [
    ("GET", "/v1/capabilities", None),
    ("GET", "/admin/", None),
    ("POST", "/mcp", MCP_LIST),
    ("GET", "/api/docs/", None),
]


@pytest.fixture
def serve(tmp_path):
    """``serve(**env)``: a real ``manage.py serve`` on 127.0.0.1, a free port: (process, port)."""
    started = []

    def start(**env):
        process = test_serve._Process(
            [sys.executable, "manage.py", "serve", "--port", "0"], _env(tmp_path, **env)
        )
        started.append(process)
        return process, int(process.wait_for_line(READY, START_TIMEOUT).group(2))

    yield start
    for process in started:
        process.kill()


@pytest.mark.slow
def test_a_rebinding_page_gets_nothing_from_a_served_process(serve):
    process, port = serve()
    foreign = [
        {"Host": f"attacker.example:{port}"},
        {"Host": f"127.0.0.1:{port}", "Origin": f"http://attacker.example:{port}"},
    ]
    for method, path, body in REAL_ROUTES:
        for headers in foreign:
            status, content_type, data = _request(port, method, path, headers, body)
            assert status == 403, (path, headers)
            assert content_type.startswith("application/json")
            assert json.loads(data)["error"]["code"] == "permission_denied"

    for headers in (
        {"Host": f"127.0.0.1:{port}"},
        {"Host": "127.0.0.1"},
        {"Host": f"localhost:{port}"},
        {},
        {"Host": f"127.0.0.1:{port}", "Origin": f"http://127.0.0.1:{port}"},
    ):
        assert _request(port, "GET", "/v1/capabilities", headers)[0] == 200, headers
        assert _request(port, "GET", "/admin/login/", headers)[0] == 200, headers
        assert _request(port, "POST", "/mcp", headers, MCP_LIST)[0] == 200, headers
    assert process.stop() == 0


@pytest.mark.slow
def test_with_a_token_the_listed_hosts_are_served(serve):
    process, port = serve(
        POWERCONTEXT_API_TOKEN="t0ken-for-origin-tests",
        POWERCONTEXT_ALLOWED_HOSTS="pc.example",
    )
    auth = {"Authorization": "Bearer t0ken-for-origin-tests"}
    listed = {**auth, "Host": f"pc.example:{port}", "Origin": "https://pc.example"}
    assert _request(port, "GET", "/v1/capabilities", listed)[0] == 200
    assert _request(port, "POST", "/mcp", listed, MCP_LIST)[0] == 200
    assert _request(port, "GET", "/v1/capabilities", {**auth, "Host": "attacker.example"})[0] == 403
    assert process.stop() == 0


@pytest.mark.slow
def test_listed_hosts_without_a_token_are_refused_at_start(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "serve", "--port", "0"],
        cwd=REPO_ROOT,
        env=_env(tmp_path, POWERCONTEXT_ALLOWED_HOSTS="pc.example"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "POWERCONTEXT_ALLOWED_HOSTS is set but POWERCONTEXT_API_TOKEN is not" in result.stderr
