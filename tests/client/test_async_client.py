"""The asyncio client against the live server: results and every error type."""

import asyncio
import time

import pytest

from powercontext_client import (
    AsyncPowerContextClient,
    CapabilityNotSupported,
    Conflict,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    Timeout,
    Unauthorized,
    Unavailable,
)

from .conftest import SCOPE

TOKEN = "async-test-token-0123456789abcdef"


def run(coroutine):
    return asyncio.run(coroutine)


def test_async_memory_round_trip(apc):
    async def scenario():
        async with apc(token="") as client:
            assert (await client.capabilities())["source_types"] == ["content"]
            written = await client.remember_memory(
                scope_id=SCOPE, kind="note", text="Async clients share the codebase."
            )
            entry = written["entry"]
            hits = await client.search_memory(scope_id=SCOPE, query="async codebase")
            assert [hit["citation"] for hit in hits["hits"]] == [entry["citation"]]
            assert (
                await client.get_memory_entry(scope_id=SCOPE, citation=entry["citation"]) == entry
            )
            revised = await client.revise_memory_entry(
                scope_id=SCOPE, citation=entry["citation"], kind="note", text="Revised."
            )
            retired = await client.retire_memory_entry(
                scope_id=SCOPE, citation=revised["entry"]["citation"]
            )
            await client.reactivate_memory_entry(
                scope_id=SCOPE, citation=retired["entry"]["citation"]
            )
            listed = await client.list_memory_entries(scope_id=SCOPE)
            assert [e["text"] for e in listed["entries"]] == ["Revised."]
            changes = await client.memory_changes(scope_id=SCOPE, since_revision=1, limit=2)
            assert changes["next_since"] == 3
            captured = await client.capture_content_source(
                scope_id=SCOPE, source_id="p", content="prompt"
            )
            assert captured["position"] == 1
            prepared = await client.prepare_context(scope_id=SCOPE, query="revised")
            assert prepared["status"] == "ready"

    run(scenario())


def test_async_error_types(apc, settings, monkeypatch):
    async def scenario():
        async with apc(token="") as client:
            entry = (await client.remember_memory(scope_id=SCOPE, kind="n", text="t"))["entry"]
            with pytest.raises(NotFound) as raised:
                await client.get_memory_entry(
                    scope_id=SCOPE,
                    citation={**entry["citation"], "entry_version_id": "mem_ver_" + "1" * 32},
                )
            assert raised.value.code == "memory_not_found"
            with pytest.raises(Conflict) as raised:
                await client.remember_memory(
                    scope_id=SCOPE, kind="n", text="u", expected_revision=7
                )
            assert raised.value.code == "revision_conflict"
            with pytest.raises(InvalidRequest) as raised:
                await client.search_memory(scope_id=" ", query="x", limit=51)
            assert dict(raised.value.field_errors).keys() == {"scope_id", "limit"}
            # Hybrid search is refused while the semantic channel is switched off.
            monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
            with pytest.raises(CapabilityNotSupported):
                await client.search_memory(scope_id=SCOPE, query="x", mode="hybrid")
            monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS")
            settings.POWERCONTEXT_MAX_BODY_BYTES = 1024
            with pytest.raises(PayloadTooLarge):
                await client.capture_content_source(
                    scope_id=SCOPE, source_id="b", content="x" * 2048
                )
            settings.POWERCONTEXT_API_TOKEN = TOKEN
            with pytest.raises(Unauthorized):
                await client.capabilities()
        async with apc(token=TOKEN) as client:
            assert (await client.capabilities())["context_versions"]

    run(scenario())


def test_async_unavailable_and_timeout(closed_port, silent_server):
    url, accepted = silent_server

    async def scenario():
        async with AsyncPowerContextClient(f"http://127.0.0.1:{closed_port}") as client:
            with pytest.raises(Unavailable) as raised:
                await client.search_memory(scope_id=SCOPE, query="x")
            assert raised.value.code == "unavailable"
        async with AsyncPowerContextClient(url, timeout=0.5) as client:
            started = time.monotonic()
            with pytest.raises(Timeout):
                await client.remember_memory(scope_id=SCOPE, kind="n", text="t")
            assert time.monotonic() - started < 3

    run(scenario())
    assert len(accepted) == 1
