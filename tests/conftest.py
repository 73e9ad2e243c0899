"""Shared fixtures: a JSON API client and small factories."""

import json
import os

import pytest

# Every response of the Django test client is checked against openapi/powercontext.yaml.
pytest_plugins = ["tests.openapi_contract"]


class ApiClient:
    """Posts JSON to the API through Django's test client and decodes the answer."""

    def __init__(self, client, token=None):
        self.client = client
        self.token = token

    def _headers(self, headers):
        merged = {}
        if self.token:
            merged["HTTP_AUTHORIZATION"] = f"Bearer {self.token}"
        merged.update(headers or {})
        return merged

    def post(self, path, body=None, *, raw=None, content_type="application/json", headers=None):
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post(
            path, data=data, content_type=content_type, **self._headers(headers)
        )

    def get(self, path, headers=None):
        return self.client.get(path, **self._headers(headers))

    def ok(self, path, body, status=200):
        response = self.post(path, body)
        assert response.status_code == status, response.content
        # Kept for its headers: a write says what it redacted in one (not in the body).
        self.last = response
        return response.json()

    @property
    def redacted(self):
        """The last answer's ``PowerContext-Redacted`` header (None when absent)."""
        return self.last.headers.get("PowerContext-Redacted")


@pytest.fixture
def api(client):
    return ApiClient(client)


@pytest.fixture
def remember(api):
    def _remember(text, scope_id="scope-a", kind="note", **extra):
        return api.ok(
            "/v1/memory/remember", {"scope_id": scope_id, "kind": kind, "text": text, **extra}
        )

    return _remember


@pytest.fixture
def embedded_texts(monkeypatch):
    """The texts the real model embeds for documents and prompts, call by call."""
    from powercontext import embedding

    model = embedding.embedder()
    calls = []
    real = model._embed  # embed_documents and embed_with_tokens both run it

    def spy(texts, **options):
        calls.append(list(texts))
        return real(texts, **options)

    monkeypatch.setattr(model, "_embed", spy)
    return calls


def error_code(response):
    return response.json()["error"]["code"]


def error_fields(response):
    return [error["field"] for error in response.json()["error"]["details"]["errors"]]


def engine():
    """ "sqlite" or "oceanbase": the engine the suite runs on (settings_test.py)."""
    return "oceanbase" if os.environ.get("POWERCONTEXT_TEST_DATABASE") == "oceanbase" else "sqlite"


def sqlite_only(reason):
    """Skip on OceanBase, saying why the test is about SQLite alone."""
    return pytest.mark.skipif(engine() != "sqlite", reason=f"SQLite only: {reason}")
