"""The workload bench/versus_reference.py and bench/profile_ops.py send, and how each
server is spoken to: this project's API (``Ours``) and the reference's (``Reference``,
PyPI ``powercontext`` 1.4.1, a different product of the same name).

Entries are bench/corpus.py's seeded texts (seed 1234); prepares use the committed
realistic prompts (bench/prompts/prepare_prompts.json) and searches the committed queries
(bench/queries/search_queries.txt), cycled. Standard library only.
"""

from __future__ import annotations

import http.client
import itertools
import time

from bench import served
from bench.corpus import memories

SEED = 1234
SCOPE = "bench-versus"
EMPTY_SCOPE = "bench-versus-empty"
SEARCH_LIMIT = 16
PACK_BYTES = 8000


def entries(count: int, *, seed: int = SEED) -> list[tuple[str, str]]:
    """The first ``count`` (kind, text) pairs of the corpus for ``seed``."""
    return list(itertools.islice(memories(seed), count))


def prompts(count: int) -> list[str]:
    return [
        p[:8192]
        for p in itertools.islice(itertools.cycle(served.load_prompts(served.PROMPTS)), count)
    ]


def queries(count: int) -> list[str]:
    return list(itertools.islice(itertools.cycle(served.load_queries(served.QUERIES)), count))


class Ours:
    """This project's API: scopes come into being with their first write."""

    name = "this project"

    def __init__(self, client: served.Client) -> None:
        self.client = client

    def create_scope(self, scope: str) -> None:
        """Nothing to do: a scope exists once written to (prepare on an unknown one is empty)."""

    def remember(self, scope: str, entry: tuple[str, str]) -> float:
        kind, text = entry
        return self.client.timed(
            "/v1/memory/remember", {"scope_id": scope, "kind": kind, "text": text}
        )[1]

    def prepare(self, scope: str, prompt: str) -> float:
        return self.client.timed(
            "/v1/context/prepare", {"scope_id": scope, "query": prompt, "max_bytes": PACK_BYTES}
        )[1]

    def search(self, scope: str, query: str) -> float:
        return self.client.timed(
            "/v1/memory/search", {"scope_id": scope, "query": query, "limit": SEARCH_LIMIT}
        )[1]

    def live(self) -> float:
        return get(self.client, "/health/live")


def get(client: served.Client, path: str) -> float:
    """Seconds of one GET on ``client``'s keep-alive connection (200 expected)."""
    started = time.perf_counter()
    if client._connection is None:
        client._connection = http.client.HTTPConnection(
            client.host, client.port, timeout=client.timeout
        )
    client._connection.request("GET", path, headers={"Connection": "keep-alive"})
    response = client._connection.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"GET {path} answered {response.status}")
    return elapsed


class Reference:
    """PyPI ``powercontext`` 1.4.1's API (its /openapi.json): scopes are created with
    ``POST /v1/scopes`` and named by the id it answers; remember, search and prepare take
    the same members as ours (``scope_id``, ``kind``/``text``, ``query``/``limit``,
    ``query``/``max_bytes``)."""

    name = "reference 1.4.1"

    def __init__(self, client: served.Client) -> None:
        self.client = client
        self.scopes: dict[str, str] = {}

    def create_scope(self, scope: str) -> None:
        answer = self.client.ok(
            "/v1/scopes",
            {"title": scope, "summary": f"benchmark scope {scope}", "idempotency_key": scope},
            status=201,
        )
        self.scopes[scope] = answer["scope_id"]

    def remember(self, scope: str, entry: tuple[str, str]) -> float:
        kind, text = entry
        return self.client.timed(
            "/v1/memory/remember", {"scope_id": self.scopes[scope], "kind": kind, "text": text}
        )[1]

    def prepare(self, scope: str, prompt: str) -> float:
        body = {"scope_id": self.scopes[scope], "query": prompt, "max_bytes": PACK_BYTES}
        return self.client.timed("/v1/context/prepare", body)[1]

    def search(self, scope: str, query: str) -> float:
        body = {"scope_id": self.scopes[scope], "query": query, "limit": SEARCH_LIMIT}
        return self.client.timed("/v1/memory/search", body)[1]

    def live(self) -> float:
        return get(self.client, "/health/live")
