"""``/mcp`` goes through the same edge as ``/v1/`` (server.middleware): the Host and Origin
rule, the body size limit, the request id, the security headers; its own checks (POST
only, the bearer token) answer in the API's error shape."""

import json

import pytest

REQUEST_ID = "X-PowerContext-Request-ID"
TOKEN = "t" * 40


@pytest.fixture
def token_required(settings):
    settings.POWERCONTEXT_API_TOKEN = TOKEN


def _post(client, path: str, **extra):
    return client.post(path, data=b"{}", content_type="application/json", **extra)


@pytest.mark.usefixtures("token_required")
def test_an_mcp_answer_carries_the_headers_every_v1_answer_does(client):
    v1 = _post(client, "/v1/memory/search", HTTP_HOST="127.0.0.1:8000")
    mcp = _post(client, "/mcp", HTTP_HOST="127.0.0.1:8000")
    assert (v1.status_code, mcp.status_code) == (401, 401)
    for header in ("Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options"):
        assert mcp[header] == v1[header], header
    assert mcp[REQUEST_ID]
    assert mcp["WWW-Authenticate"] == 'Bearer realm="powercontext"'
    assert json.loads(mcp.content)["error"]["code"] == "unauthorized"


def test_mcp_refuses_a_foreign_host_and_origin_as_v1_does(client):
    for headers in ({"HTTP_HOST": "evil.example"}, {"HTTP_ORIGIN": "http://evil.example"}):
        v1 = _post(client, "/v1/memory/search", **{"HTTP_HOST": "127.0.0.1:8000", **headers})
        mcp = _post(client, "/mcp", **{"HTTP_HOST": "127.0.0.1:8000", **headers})
        assert (v1.status_code, mcp.status_code) == (403, 403)
        assert json.loads(mcp.content) == json.loads(v1.content)


def test_mcp_refuses_a_body_over_the_limit_before_reading_it(client, settings):
    settings.POWERCONTEXT_MAX_BODY_BYTES = 10
    mcp = _post(client, "/mcp", HTTP_HOST="127.0.0.1:8000")
    big = client.post(
        "/mcp", data=b"x" * 11, content_type="application/json", HTTP_HOST="127.0.0.1:8000"
    )
    assert mcp.status_code != 413
    assert big.status_code == 413
    assert json.loads(big.content)["error"]["code"] == "payload_too_large"


def test_mcp_answers_only_post(client):
    answer = client.get("/mcp", HTTP_HOST="127.0.0.1:8000")
    assert answer.status_code == 405
    assert answer["Allow"] == "POST"
    assert json.loads(answer.content)["error"]["code"] == "method_not_allowed"
