"""Histories to carry through an archive, and what must read the same on the other side.

Used in the test process (through the OpenAPI-checked test client) and in the
subprocesses of the round-trip tests (``manage.py shell -c``, a plain test client), so
both sides build and read through the same API calls.

- ``hostile_history``: every kind of write (remember, revise, retire, reactivate,
  captured prompts, proposals approved, rejected, revised and pending, an Experience
  revised) with hostile text: NUL, U+2028/U+2029, 8 KB of control characters, CJK,
  emoji, in two scopes, one of them with a hostile id.
- ``bulk_memory``: a scope of N entries, one revision each, written as
  ``memory.services`` writes them but with bulk INSERTs (the services take ~25 ms a
  remember on a shared CI core: 10,000 would take minutes), then its derived state
  rebuilt; real service calls then revise, retire and reactivate some of them.
- ``probe``: what a client can read: the full ``changes`` feed, every citation it
  names resolved through ``entries/get``, every entry listed at the head, every
  candidate and Experience revision, the captured prompts, and Context Packs.
"""

import json
from typing import Any

CONTROL = "".join(chr(code) for code in range(1, 32)) + "\x7f"
HOSTILE_TEXTS = [
    "before\x00after: a NUL inside",
    "line\u2028separator\u2029paragraph \u0085next line and U+2028 in the middle",
    (CONTROL * (8192 // len(CONTROL) + 1))[:8192],
    "数据库迁移前先运行集成测试 データベースの移行 데이터베이스 마이그레이션 🚀",
    '{"type":"row","values":{}}\n{"digest":"forged"}',
]
HOSTILE_SCOPE = "scope 中文\u2028\x01\ttab"
PLAIN_SCOPE = "scope-plain"
PROMPTS = [
    "How do I run the database migration tests?",
    "数据库迁移 测试",
    "before after NUL",
    "line separator paragraph",
    "Which pipeline deploys the blue green release?",
]


def _proposal(lesson: str) -> dict[str, str]:
    return {
        "situation": "A schema change broke the nightly import \u2028 数据库",
        "action": "We added a migration test for the importer.\x00",
        "outcome": "The next schema change was caught in CI.",
        "lesson": lesson,
    }


def hostile_history(api: Any, reviewer: Any) -> None:
    """Write the hostile history through ``api`` (agent) and ``reviewer`` (a reviewer's
    ApiClient)."""
    for scope_id in (HOSTILE_SCOPE, PLAIN_SCOPE):
        written = [
            api.ok(
                "/v1/memory/remember",
                {"scope_id": scope_id, "kind": "note", "text": text, "reason": "why \u2028"},
            )["entry"]
            for text in HOSTILE_TEXTS
        ]
        api.ok(
            "/v1/memory/remember",
            {
                "scope_id": scope_id,
                "kind": "runbook",
                "text": "Deploys use the blue green pipeline.",
            },
        )
        revised = api.ok(
            "/v1/memory/entries/revise",
            {
                "scope_id": scope_id,
                "citation": written[0]["citation"],
                "kind": "note",
                "text": "revised: before\x00after, 数据库",
            },
        )["entry"]
        retired = api.ok(
            "/v1/memory/entries/retire",
            {"scope_id": scope_id, "citation": revised["citation"], "reason": "gone\x00"},
        )["entry"]
        api.ok(
            "/v1/memory/entries/retire",
            {"scope_id": scope_id, "citation": written[1]["citation"]},
        )
        api.ok(
            "/v1/memory/entries/reactivate",
            {"scope_id": scope_id, "citation": retired["citation"], "reason": "back \u2029"},
        )
        for number, prompt in enumerate([*PROMPTS, CONTROL, "\u2028\x00数据库"], start=1):
            api.ok(
                "/v1/sources/content",
                {
                    "scope_id": scope_id,
                    "source_id": f"prompt-{number}\u2028",
                    "content": prompt,
                    "metadata": {"cwd": "/work/数据\x00", "n": number},
                },
                status=202,
            )
        source = {"name": "content", "source_id": "prompt-1\u2028"}
        approved = api.ok(
            "/v1/experience/propose",
            {
                "scope_id": scope_id,
                "proposal": _proposal("Run the migration tests \x00 before 数据库迁移."),
                "source_refs": [source],
            },
            status=201,
        )
        decided = reviewer.ok(
            "/v1/artifact-candidates/approve",
            {"scope_id": scope_id, "candidate_id": approved["candidate_id"], "expected_version": 1},
        )
        revision = api.ok(
            "/v1/experience/propose",
            {
                "scope_id": scope_id,
                "proposal": _proposal("Run the migration tests and the importer's, \u2028 too."),
                "source_refs": [source],
                "target": decided["result_artifact"],
                "reason": "sharper \x00",
            },
            status=201,
        )
        reviewer.ok(
            "/v1/artifact-candidates/approve",
            {"scope_id": scope_id, "candidate_id": revision["candidate_id"], "expected_version": 1},
        )
        rejected = api.ok(
            "/v1/experience/propose",
            {
                "scope_id": scope_id,
                "proposal": _proposal("Just a log line."),
                "source_refs": [source],
            },
            status=201,
        )
        reviewer.ok(
            "/v1/artifact-candidates/reject",
            {
                "scope_id": scope_id,
                "candidate_id": rejected["candidate_id"],
                "expected_version": 1,
                "reason": "Not a lesson \u2028 数据\x00",
            },
        )
        pending = api.ok(
            "/v1/experience/propose",
            {"scope_id": scope_id, "proposal": _proposal("Pending 🚀"), "source_refs": [source]},
            status=201,
        )
        reviewer.ok(
            "/v1/artifact-candidates/revise",
            {
                "scope_id": scope_id,
                "candidate_id": pending["candidate_id"],
                "expected_version": 1,
                "proposal": _proposal("Pending, revised by a reviewer \u2029"),
            },
        )


def bulk_memory(scope_id: str, entries: int, *, seed: int = 29) -> None:
    """``entries`` remembered entries in ``scope_id`` (empty), one revision each, as
    ``memory_remember`` writes them; then every 1,000th revised, every 1,500th retired,
    one of those reactivated, through the services."""
    from django.db import transaction

    from bench.corpus import memories
    from memory.models import ManifestState, MemoryEntryVersion, MemoryManifestRow
    from memory.services import (
        content_hash,
        memory_entry_reactivate,
        memory_entry_retire,
        memory_entry_revise,
    )
    from memory.values import MEMORY_ARTIFACT_ID, MEMORY_FAMILY, Citation
    from powercontext import maintenance
    from powercontext.artifacts import REVISIONS
    from powercontext.chain import GENESIS_HASH, canonical_json
    from powercontext.models import ArtifactHead, ArtifactRevision

    corpus = memories(seed)
    previous = GENESIS_HASH
    versions: list[MemoryEntryVersion] = []
    rows: list[MemoryManifestRow] = []
    revisions: list[ArtifactRevision] = []

    def flush() -> None:
        MemoryEntryVersion.objects.bulk_create(versions, batch_size=500)
        MemoryManifestRow.objects.bulk_create(rows, batch_size=500)
        ArtifactRevision.objects.bulk_create(revisions, batch_size=500)
        for written in (versions, rows, revisions):
            written.clear()

    with transaction.atomic():
        for number in range(1, entries + 1):
            kind, text = next(corpus)
            entry_id, version_id = f"mem_ent_{number:032x}", f"mem_ver_{number:032x}"
            versions.append(
                MemoryEntryVersion(
                    entry_version_id=version_id,
                    scope_id=scope_id,
                    entry_id=entry_id,
                    version=1,
                    previous_version_id=None,
                    kind=kind,
                    text=f"{text} ({number})",
                    content_hash=content_hash(
                        kind=kind, text=f"{text} ({number})", source_refs=[], artifact_refs=[]
                    ),
                    created_in_revision=number,
                )
            )
            rows.append(
                MemoryManifestRow(
                    scope_id=scope_id,
                    entry_id=entry_id,
                    entry_version_id=version_id,
                    state=ManifestState.ACTIVE,
                    valid_from=number,
                )
            )
            content = canonical_json(
                {
                    "changes": [
                        {
                            "op": "add",
                            "entry_id": entry_id,
                            "from_entry_version_id": None,
                            "to_entry_version_id": version_id,
                            "reason": None,
                        }
                    ]
                }
            )
            digest = REVISIONS.link(previous, content)
            revisions.append(
                ArtifactRevision(
                    scope_id=scope_id,
                    family=MEMORY_FAMILY,
                    artifact_id=MEMORY_ARTIFACT_ID,
                    revision=number,
                    content=content,
                    previous_hash=previous,
                    revision_hash=digest,
                )
            )
            previous = digest
            if len(versions) == 5000:
                flush()
        flush()
        ArtifactHead.objects.create(
            scope_id=scope_id,
            family=MEMORY_FAMILY,
            artifact_id=MEMORY_ARTIFACT_ID,
            revision=entries,
        )
    for family in maintenance.families():
        maintenance.rebuild(scope_id=scope_id, family_name=family.name)
    head = entries
    for number in range(1000, entries + 1, 1000):
        citation = Citation(head, f"mem_ent_{number:032x}", f"mem_ver_{number:032x}")
        head = memory_entry_revise(
            scope_id=scope_id, citation=citation, kind="note", text=f"revised entry {number}"
        ).memory.revision
    retired = None
    for number in range(1500, entries + 1, 1500):
        if number % 1000 == 0:
            continue
        citation = Citation(head, f"mem_ent_{number:032x}", f"mem_ver_{number:032x}")
        result = memory_entry_retire(scope_id=scope_id, citation=citation)
        head = result.memory.revision
        retired = retired or Citation(head, citation.entry_id, citation.entry_version_id)
    if retired is not None:
        memory_entry_reactivate(scope_id=scope_id, citation=retired)


# -- reading it back ---------------------------------------------------------------------


def _changes(api: Any, scope_id: str) -> list[dict[str, Any]]:
    revisions: list[dict[str, Any]] = []
    since = 0
    while True:
        page = api.ok("/v1/memory/changes", {"scope_id": scope_id, "since_revision": since})
        revisions.extend(page["revisions"])
        if page["next_since"] is None:
            return revisions
        since = page["next_since"]


def _citations(revisions: list[dict[str, Any]], every: int) -> list[dict[str, Any]]:
    """The citation each write issued (the version it made active, or retired), every
    ``every``-th of them, and all of those of revises, retires and reactivations."""
    citations = []
    for index, revision in enumerate(revisions):
        for change in revision["changes"]:
            version = change["to_entry_version_id"] or change["from_entry_version_id"]
            if index % every and change["op"] == "add":
                continue
            citations.append(
                {
                    "memory_ref": revision["memory_ref"],
                    "entry_id": change["entry_id"],
                    "entry_version_id": version,
                }
            )
    return citations


def _pages(api: Any, path: str, body: dict[str, Any], items: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = api.ok(path, {**body, **({"cursor": cursor} if cursor else {})})
        found.extend(page[items])
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def probe(api: Any, scopes: list[str], *, every: int = 1) -> dict[str, Any]:
    """Everything a client reads of ``scopes`` (JSON-able), to compare across databases.
    ``every``: resolve every n-th ``add`` citation only (all others always)."""
    from powercontext.models import SourceRecord

    read: dict[str, Any] = {}
    for scope_id in scopes:
        revisions = _changes(api, scope_id)
        entries = [
            api.ok("/v1/memory/entries/get", {"scope_id": scope_id, "citation": citation})
            for citation in _citations(revisions, every)
        ]
        listed = _pages(
            api,
            "/v1/memory/entries/list",
            {"scope_id": scope_id, "include_inactive": True},
            "entries",
        )
        candidates = [
            candidate
            for status in ("pending", "approved", "rejected")
            for candidate in _pages(
                api,
                "/v1/artifact-candidates/list",
                {"scope_id": scope_id, "status": status},
                "candidates",
            )
        ]
        experience = [
            api.ok(
                "/v1/experience/get",
                {"scope_id": scope_id, "artifact": candidate["result_artifact"]},
            )
            for candidate in candidates
            if candidate["result_artifact"]
        ]
        packs = [
            api.ok(
                "/v1/context/prepare",
                {"scope_id": scope_id, "query": prompt, "max_bytes": 4096},
            )
            for prompt in PROMPTS
        ]
        sources = list(
            SourceRecord.objects.filter(scope_id=scope_id)
            .order_by("position")
            .values_list("source_type", "source_id", "position", "payload", "payload_hash")
        )
        read[scope_id] = {
            "changes": revisions,
            "cited": entries,
            "listed": listed,
            "candidates": candidates,
            "experience": experience,
            "packs": packs,
            "sources": [list(source) for source in sources],
        }
    return read


def probe_json(api: Any, scopes: list[str], *, every: int = 1) -> str:
    """``probe`` as one line of JSON, all of it ASCII (what a subprocess prints)."""
    return json.dumps(probe(api, scopes, every=every), sort_keys=True)
