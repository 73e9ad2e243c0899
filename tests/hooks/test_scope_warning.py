"""The server's ``PowerContext-Warning`` (a scope id that looks mistyped) reaches the
hook's stderr line by its code alone: the line never names the scope."""

from .conftest import Reply, accepted, prepared

PREPARE = "/v1/context/prepare"
SOURCES = "/v1/sources/content"
WARNING = (
    "scope_near_miss: scope_id 'SECRET-SCOPE-MARKER' holds nothing yet and is one edit "
    "away from the scope 'SECRET-SCOPE-MARKEr'; the request was served as asked"
)


def _routes(prepare_reply):
    return {PREPARE: prepare_reply, SOURCES: Reply(202, accepted())}


def test_a_delivered_pack_with_a_scope_warning_also_prints_its_code(hook, fake_server):
    reply = Reply(200, prepared("BEGIN POWERCONTEXT CONTEXT\n"), {"PowerContext-Warning": WARNING})
    run = hook(
        "claude", fake_server(_routes(reply)).url, POWERCONTEXT_SCOPE_ID="SECRET-SCOPE-MARKER"
    )
    assert run.returncode == 0
    assert run.context() == "BEGIN POWERCONTEXT CONTEXT\n"
    assert run.diagnostic()["outcome"] == "ready"
    assert run.diagnostic()["warning"] == "scope_near_miss"
    assert b"SECRET-SCOPE" not in run.stderr


def test_an_empty_pack_with_a_scope_warning_says_so(hook, fake_server):
    reply = Reply(200, prepared(None), {"PowerContext-Warning": WARNING})
    run = hook(
        "codex", fake_server(_routes(reply)).url, POWERCONTEXT_SCOPE_ID="SECRET-SCOPE-MARKER"
    )
    assert run.stdout == b""
    assert run.diagnostic()["outcome"] == "empty"
    assert run.diagnostic()["warning"] == "scope_near_miss"
    assert b"SECRET-SCOPE" not in run.stderr


def test_a_warning_that_is_not_a_code_is_not_repeated(hook, fake_server):
    reply = Reply(200, prepared(None), {"PowerContext-Warning": "SECRET-SCOPE-MARKER is odd"})
    run = hook("codex", fake_server(_routes(reply)).url)
    assert "warning" not in run.diagnostic()
    assert b"SECRET-SCOPE" not in run.stderr
