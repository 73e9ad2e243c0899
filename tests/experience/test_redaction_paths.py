"""Every write path keeps no secret and changes no legitimate text (issue 38, item 3):
capture, remember, revise, propose, the MCP tools and the desk's revise all run one
redaction step (``powercontext.redaction.Redactions.text``): the coverage corpus
(``secret_samples.SECRETS``, 100+ formats) is at least 95 % redacted on each, at most
1 in 60 of the legitimate texts (``secret_samples.LEGITIMATE``) is changed, and
``<private>`` spans are cut on each. A literal marker in the input is escaped, so a
marker in stored text always means a real redaction (item 8)."""

import json

import pytest
from django.contrib.admin.utils import quote
from mcp.server.mcpserver import Context

from experience import mcp as experience_mcp
from experience.models import CandidateVersion
from memory import mcp as memory_mcp
from memory.models import MemoryEntryVersion
from powercontext.api import mcp as api_mcp
from powercontext.models import SourceRecord
from tests.powercontext.redaction import secret_samples as s

from .conftest import SCOPE, SOURCE, capture_source, proposal

pytestmark = pytest.mark.django_db
# Chunks of the corpus per write, under every path's limit (8,192 bytes for Memory,
# 8,000 characters for a proposal's field).
CHUNK_CHARS = 5000
REDACTED_AT_LEAST = 0.95
CHANGED_AT_MOST = 1 / 60


def chunks(texts):
    """``texts`` joined by blank lines into pieces of at most CHUNK_CHARS."""
    out, current = [], ""
    for text in texts:
        if current and len(current) + 2 + len(text) > CHUNK_CHARS:
            out.append(current)
            current = ""
        current = f"{current}\n\n{text}" if current else text
    return [*out, current] if current else out


@pytest.fixture
def desk(client, reviewer):
    reviewer.is_staff = True
    reviewer.save()
    client.force_login(reviewer)
    return client


@pytest.fixture
def in_process_mcp(monkeypatch):
    """The MCP tools called in-process (as the stdio transport does: the caller is the
    agent); their worker-thread connection cleanup is left out, as the test's database
    lives in this connection."""

    class _Connections:
        @staticmethod
        def close_all():
            pass

    monkeypatch.setattr(api_mcp, "connections", _Connections)


def _capture(api, texts):
    stored = []
    for index, text in enumerate(chunks(texts)):
        api.ok(
            "/v1/sources/content",
            {"scope_id": SCOPE, "source_id": f"corpus-{index}", "content": text},
            status=202,
        )
        payload = SourceRecord.objects.get(source_id=f"corpus-{index}").payload
        stored.append(json.loads(payload)["content"])
    return stored


def _remember(api, texts):
    for text in chunks(texts):
        api.ok("/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": text})
    return list(MemoryEntryVersion.objects.values_list("text", flat=True))


def _revise(api, texts):
    for index, text in enumerate(chunks(texts)):
        entry = api.ok(
            "/v1/memory/remember",
            {"scope_id": SCOPE, "kind": "note", "text": f"placeholder {index}"},
        )["entry"]
        api.ok(
            "/v1/memory/entries/revise",
            {"scope_id": SCOPE, "citation": entry["citation"], "kind": "note", "text": text},
        )
    return list(MemoryEntryVersion.objects.values_list("text", flat=True))


def _propose(api, texts):
    capture_source()
    for text in chunks(texts):
        api.ok(
            "/v1/experience/propose",
            {"scope_id": SCOPE, "proposal": proposal(action=text), "source_refs": [SOURCE]},
            status=201,
        )
    return list(CandidateVersion.objects.values_list("action", flat=True))


def _mcp_remember(api, texts):
    for text in chunks(texts):
        result = memory_mcp.remember_memory(Context(), scope_id=SCOPE, kind="note", text=text)
        assert not result.is_error, result.structured_content
    return list(MemoryEntryVersion.objects.values_list("text", flat=True))


def _mcp_propose(api, texts):
    capture_source()
    for text in chunks(texts):
        result = experience_mcp.propose_experience(
            Context(), scope_id=SCOPE, proposal=proposal(action=text), source_refs=[SOURCE]
        )
        assert not result.is_error, result.structured_content
    return list(CandidateVersion.objects.values_list("action", flat=True))


def _desk_revise(api, texts, desk):
    capture_source()
    for text in chunks(texts):
        candidate = api.ok(
            "/v1/experience/propose",
            {"scope_id": SCOPE, "proposal": proposal(), "source_refs": [SOURCE]},
            status=201,
        )
        response = desk.post(
            f"/admin/experience/candidate/{quote(candidate['candidate_id'])}/revise/",
            {
                "expected_version": 1,
                **proposal(action=text),
                "reason": "edited at the desk",
                "confirmed": "on",
            },
        )
        assert response.status_code == 302, response.content[:2000]
    return list(CandidateVersion.objects.filter(version=2).values_list("action", flat=True))


PATHS = {
    "capture": _capture,
    "remember": _remember,
    "revise": _revise,
    "propose": _propose,
    "mcp-remember": _mcp_remember,
    "mcp-propose": _mcp_propose,
    "desk-revise": _desk_revise,
}


def _write(path, api, desk, texts):
    if path == "desk-revise":
        return _desk_revise(api, texts, desk)
    return PATHS[path](api, texts)


@pytest.mark.parametrize("path", list(PATHS))
def test_every_write_path_redacts_the_corpus(path, api, desk, in_process_mcp):
    stored = "\n".join(_write(path, api, desk, [text for _, text, _ in s.SECRETS]))
    leaked = [label for label, _, secret in s.SECRETS if secret in stored]
    rate = 1 - len(leaked) / len(s.SECRETS)
    print(f"{path}: {rate:.1%} of {len(s.SECRETS)} redacted; leaked: {leaked}")
    assert rate >= REDACTED_AT_LEAST, leaked


@pytest.mark.parametrize("path", list(PATHS))
def test_every_write_path_keeps_legitimate_texts_byte_exact(path, api, desk, in_process_mcp):
    stored = "\n".join(_write(path, api, desk, s.LEGITIMATE))
    changed = [text for text in s.LEGITIMATE if text not in stored]
    print(f"{path}: {len(changed)} of {len(s.LEGITIMATE)} changed: {changed}")
    assert len(changed) <= CHANGED_AT_MOST * len(s.LEGITIMATE), changed


PRIVATE = "Deploy with the runbook.<private> my home address is 1 Elm St</private> Then check."


@pytest.mark.parametrize("path", list(PATHS))
def test_every_write_path_cuts_private_spans(path, api, desk, in_process_mcp):
    stored = "\n".join(_write(path, api, desk, [PRIVATE]))
    assert "Elm" not in stored
    assert "Deploy with the runbook. Then check." in stored


LITERAL = "The log line reads password=[redacted:password] and token ghp_"


@pytest.mark.parametrize("path", list(PATHS))
def test_a_literal_marker_is_told_apart_from_a_real_redaction(path, api, desk, in_process_mcp):
    text = f"The log line reads [redacted:password] and then DB_PASSWORD={s.PASSWORD}"
    stored = "\n".join(_write(path, api, desk, [text]))
    # The one that was typed is escaped; the one the server put in is a marker.
    assert (
        "The log line reads [redacted\\:password] and then DB_PASSWORD=[redacted:password]"
        in stored
    )
    assert stored.count("[redacted:") == 1


def test_memory_and_the_desk_tell_a_literal_marker_from_a_redaction(api, desk, propose):
    written = api.ok(
        "/v1/memory/remember",
        {"scope_id": SCOPE, "kind": "note", "text": "pasted: [redacted:aws-secret-key] as is"},
    )
    entry = api.ok(
        "/v1/memory/entries/get",
        {"scope_id": SCOPE, "citation": written["entry"]["citation"]},
    )
    assert entry["text"] == "pasted: [redacted\\:aws-secret-key] as is"
    candidate = propose(proposal=proposal(action="it printed [redacted:jwt] literally"))
    page = desk.get(f"/admin/experience/candidate/{quote(candidate['candidate_id'])}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "[redacted\\:jwt]" in html
    assert "[redacted:jwt]" not in html


@pytest.mark.parametrize("depth", [500, 880])
def test_capture_metadata_nested_deep_is_stored_and_redacted(api, depth):
    inner = {"note": f"token {s.GITHUB_TOKEN}"}
    for _ in range(depth):
        inner = {"a": inner}
    answer = api.post(
        "/v1/sources/content",
        {"scope_id": SCOPE, "source_id": f"deep-{depth}", "content": "x", "metadata": inner},
    )
    assert answer.status_code == 202, answer.content[:500]
    payload = SourceRecord.objects.get(source_id=f"deep-{depth}").payload
    assert s.GITHUB_TOKEN not in payload
    assert "[redacted:github-token]" in payload


@pytest.mark.parametrize("depth", [1_000, 10_000])
def test_capture_metadata_nested_deeper_than_json_allows_is_a_clear_422(api, depth):
    body = (
        '{"scope_id":"scope-a","source_id":"deep","content":"x","metadata":'
        + '{"a":' * depth
        + "1"
        + "}" * depth
        + "}"
    )
    answer = api.post("/v1/sources/content", raw=body)
    assert answer.status_code == 422, answer.content[:500]
    assert answer.json()["error"]["code"] == "invalid_request"


def test_a_revision_keeps_the_markers_of_the_version_it_revises(api, desk, propose):
    """Revising a text the server redacted, with its markers as they came back, keeps
    them as markers; a marker typed anew is still escaped."""
    written = api.ok(
        "/v1/memory/remember",
        {"scope_id": SCOPE, "kind": "note", "text": f"db password={s.PASSWORD}"},
    )["entry"]
    assert written["text"] == "db password=[redacted:password]"
    revised = api.ok(
        "/v1/memory/entries/revise",
        {
            "scope_id": SCOPE,
            "citation": written["citation"],
            "kind": "note",
            "text": written["text"] + ", and not [redacted:password] again",
        },
    )["entry"]
    assert revised["text"] == (
        "db password=[redacted:password], and not [redacted\\:password] again"
    )
    candidate = propose(proposal=proposal(action=f"set password={s.PASSWORD}"))
    stored = CandidateVersion.objects.get(candidate__candidate_id=candidate["candidate_id"])
    assert stored.action == "set password=[redacted:password]"
    response = desk.post(
        f"/admin/experience/candidate/{quote(candidate['candidate_id'])}/revise/",
        {
            "expected_version": 1,
            **proposal(action=stored.action + " [redacted:jwt]"),
            "reason": "edited at the desk",
            "confirmed": "on",
        },
    )
    assert response.status_code == 302
    version = CandidateVersion.objects.get(
        candidate__candidate_id=candidate["candidate_id"], version=2
    )
    assert version.action == "set password=[redacted:password] [redacted\\:jwt]"
