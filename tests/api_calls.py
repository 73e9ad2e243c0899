"""The API calls the tests make again and again, through the ``api`` fixture's client
(``tests.conftest.ApiClient``): a Context Pack, a Memory search, a captured prompt, and
what a pack cites. One definition each, so a test file states only what it checks."""

import hashlib
import json

from tests.contextpack.packs import items

PREPARE = "/v1/context/prepare"
SEARCH = "/v1/memory/search"
CAPTURE = "/v1/sources/content"


def prepare(api, scope_id, query, max_bytes=8000):
    """The Context Pack for ``query`` (``POST /v1/context/prepare``), answered 200."""
    return api.ok(PREPARE, {"scope_id": scope_id, "query": query, "max_bytes": max_bytes})


def cited(pack):
    """What ``pack`` cites, in order: each item's entry id (its whole citation when it
    names no entry, as an Experience item's); none for an empty pack."""
    return [item["citation"].get("entry_id") or item["citation"] for item in items(pack)]


def search(api, scope_id, query, **body):
    """The Memory search's answer (``POST /v1/memory/search``), answered 200."""
    return api.ok(SEARCH, {"scope_id": scope_id, "query": query, **body})


def search_ids(api, scope_id, query, limit=8, **body):
    """The entry ids the Memory search finds, best first."""
    answer = search(api, scope_id, query, limit=limit, **body)
    return [hit["citation"]["entry_id"] for hit in answer["hits"]]


def capture(api, scope_id, source_id, content, **body):
    """Capture ``content`` (``POST /v1/sources/content``), answered 202."""
    body = {"scope_id": scope_id, "source_id": source_id, "content": content, **body}
    return api.ok(CAPTURE, body, status=202)


def capture_prompt(api, scope_id, prompt, *, session="s", turn="0"):
    """Capture ``prompt`` as the hook does: one source per (session, turn, prompt)."""
    digest = hashlib.sha256(json.dumps([scope_id, session, turn, prompt]).encode()).hexdigest()
    return capture(api, scope_id, f"prompt:{digest}", prompt)


def search_texts(api, scope_id, query, **body):
    """The texts of the Memory search's hits, best first."""
    return [hit["text"] for hit in search(api, scope_id, query, **body)["hits"]]
