"""The six behaviours of issue 30's "Empty is no longer empty", through the HTTP API: each on
a fresh scope, as a new user would try it; PASS or FAIL with what the server gave. The
identifiers are fixed: every run asks the same thing.

1. ``Deploy with make release zq20c249a9551941`` stored: prepare for another identifier no
   entry holds (``zq7f01d3e5b2a4c6e8``) is empty.
2. ``obsolete deployment note <id1>`` retired, ``current deployment note <id2>`` active:
   prepare for ``<id1>`` is empty.
3. ``数据库迁移需要先备份`` and ``部署流程在周五冻结`` stored: search for ``迁移`` returns the
   first only, and the pack for ``数据库迁移`` holds the first only.
4. Five approved Experiences worded alike, each with its own identifier (proposed by the
   agent with a captured prompt as evidence, approved with a reviewer's personal token):
   prepare for one identifier holds exactly that one.
5. Five entries share a unique token, a sixth says ``unrelated <other token>``: search for
   the token (limit 10) returns exactly the five.
6. Three long entries (about 1,400 bytes) carry a tag (the word ``deployment``) no short
   entry has, four short entries are worded alike without it: at every budget from 512 to
   8000 bytes (512, 768, ..., 7936, 8000) the pack for the tag cites tagged entries only (or
   is empty).

By default a real ``manage.py serve`` on a fresh data directory (``--engine sqlite`` or
``oceanbase``), with a reviewer made by ``manage.py reviewer NAME --password-stdin``
before it starts. ``--server URL`` runs against a running server instead (``PC_TOKEN``:
its agent token; ``--reviewer-token``: a reviewer's personal token, else case 4 is
skipped and says so). The exit status is 0 when every case passed.

    .venv/bin/python bench/restraint_cases.py
    .venv/bin/python bench/restraint_cases.py --server http://127.0.0.1:8000 --reviewer-token T
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.served import (  # noqa: E402
    PACK_BEGIN,
    PACK_END,
    REPO_ROOT,
    Client,
    ServerProcess,
    Store,
    open_store,
)

TOKEN_LINE = re.compile(r"Personal API token \(shown once; replaces any earlier one\): (\S+)")
BUDGETS = [*range(512, 8000, 256), 8000]


@dataclass
class Outcome:
    verdict: str  # PASS, FAIL or SKIP
    got: str


@dataclass
class Server:
    """The agent's client, the reviewer's (None when no reviewer token), a fresh scope."""

    agent: Client
    reviewer: Client | None
    run: str

    def scope(self, case: int) -> str:
        return f"restraint-case-{case}-{self.run}"

    def remember(self, scope_id: str, text: str, kind: str = "fact") -> dict:
        entry = self.agent.ok(
            "/v1/memory/remember", {"scope_id": scope_id, "kind": kind, "text": text}
        )["entry"]
        return entry

    def prepare(self, scope_id: str, query: str, max_bytes: int = 8000) -> tuple[str, list[dict]]:
        """(status, the pack's items)."""
        payload = self.agent.ok(
            "/v1/context/prepare", {"scope_id": scope_id, "query": query, "max_bytes": max_bytes}
        )
        if payload["status"] != "ready":
            return payload["status"], []
        lines = payload["content"].split("\n")
        document = json.loads("\n".join(lines[lines.index(PACK_BEGIN) + 1 : lines.index(PACK_END)]))
        return payload["status"], document["items"]

    def search(self, scope_id: str, query: str, limit: int = 10) -> list[dict]:
        return self.agent.ok(
            "/v1/memory/search", {"scope_id": scope_id, "query": query, "limit": limit}
        )["hits"]


def cited(item: dict) -> str:
    """An item's entry_id (Memory) or artifact_id (Experience)."""
    citation = item["citation"]
    return citation.get("entry_id") or citation["artifact_ref"]["artifact_id"]


def shown(texts: Sequence[str], width: int = 60) -> str:
    short = [t.replace("\n", " ")[:width] + ("..." if len(t) > width else "") for t in texts]
    return "[" + "; ".join(repr(t) for t in short) + "]"


def pack_got(status: str, items: list[dict]) -> str:
    return f"{status}, {len(items)} item(s) {shown([i['content'] for i in items])}"


# -- the cases ---------------------------------------------------------------------------------


def unknown_identifier(server: Server) -> Outcome:
    scope = server.scope(1)
    server.remember(scope, "Deploy with make release zq20c249a9551941")
    status, items = server.prepare(scope, "zq7f01d3e5b2a4c6e8")
    return Outcome("PASS" if status == "empty" else "FAIL", pack_got(status, items))


def retired_match(server: Server) -> Outcome:
    scope = server.scope(2)
    obsolete = server.remember(scope, "obsolete deployment note zq5d1c0a7e93b8f24")
    server.remember(scope, "current deployment note zq8b4e6f2a01c9d735")
    server.agent.ok(
        "/v1/memory/entries/retire",
        {"scope_id": scope, "citation": obsolete["citation"], "reason": "superseded"},
    )
    status, items = server.prepare(scope, "zq5d1c0a7e93b8f24")
    return Outcome("PASS" if status == "empty" else "FAIL", pack_got(status, items))


def unreadable_script(server: Server) -> Outcome:
    scope = server.scope(3)
    first = server.remember(scope, "数据库迁移需要先备份")["citation"]["entry_id"]
    server.remember(scope, "部署流程在周五冻结")
    hits = server.search(scope, "迁移")
    status, items = server.prepare(scope, "数据库迁移")
    search_ok = [h["citation"]["entry_id"] for h in hits] == [first]
    pack_ok = [cited(i) for i in items] == [first]
    got = f"search 迁移: {shown([h['text'] for h in hits])}; "
    got += f"pack 数据库迁移: {pack_got(status, items)}"
    return Outcome("PASS" if search_ok and pack_ok else "FAIL", got)


def alike_experiences(server: Server) -> Outcome:
    if server.reviewer is None:
        return Outcome("SKIP", "no reviewer token (--reviewer-token): nothing can be approved")
    scope = server.scope(4)
    server.agent.ok(
        "/v1/sources/content",
        {"scope_id": scope, "source_id": "case-4", "content": "The nightly deploy failed again."},
        status=202,
    )
    identifiers = [
        "zqx3f9a01c7d2e5b8",
        "zqx8e27b4d0c9a163",
        "zqx51c6e8f2a07d94",
        "zqx0d4b9a3e6f1c72",
        "zqx96a2f5c18e0b3d",
    ]
    artifacts = []
    for ident in identifiers:
        candidate = server.agent.ok(
            "/v1/experience/propose",
            {
                "scope_id": scope,
                "proposal": {
                    "situation": f"The nightly deploy of the billing worker failed with {ident}.",
                    "action": "We rolled the release back and ran the migration by hand.",
                    "outcome": "The worker came back once the migration had run.",
                    "lesson": f"When the deploy fails with {ident}, roll back, then migrate.",
                },
                "source_refs": [{"name": "content", "source_id": "case-4"}],
            },
            status=201,
        )
        approved = server.reviewer.ok(
            "/v1/artifact-candidates/approve",
            {
                "scope_id": scope,
                "candidate_id": candidate["candidate_id"],
                "expected_version": candidate["version"],
            },
        )
        artifacts.append(approved["result_artifact"]["artifact_id"])
    status, items = server.prepare(scope, identifiers[2])
    names = {artifact: f"#{n + 1}" for n, artifact in enumerate(artifacts)}
    got = f"asked for #3: {status}, cites {[names.get(cited(i), cited(i)) for i in items]}"
    return Outcome("PASS" if [cited(i) for i in items] == [artifacts[2]] else "FAIL", got)


def shared_token(server: Server) -> Outcome:
    scope = server.scope(5)
    shared = "zqt5b9e2c71d04a"
    texts = [
        f"The {shared} flag turns the new cache path on.",
        f"Set {shared} in CI to skip the flaky upload test.",
        f"{shared} must stay off in production until the audit is done.",
        f"The dashboard shows {shared} requests in the second panel.",
        f"Ask Dana before removing {shared} from the config.",
    ]
    five = {server.remember(scope, text)["citation"]["entry_id"] for text in texts}
    server.remember(scope, "unrelated zqu8f3a6d1e92c0")
    hits = server.search(scope, shared)
    found = [h["citation"]["entry_id"] for h in hits]
    verdict = "PASS" if len(found) == 5 and set(found) == five else "FAIL"
    return Outcome(verdict, f"{len(hits)} hit(s) {shown([h['text'] for h in hits], 40)}")


def long_tagged(server: Server) -> Outcome:
    scope = server.scope(6)
    # A word the model reads: an identifier-like tag would bring no short entry in at all
    # (they share neither its terms nor, for the model, its meaning), and test nothing.
    tag = "deployment"
    steps = (
        "Release checklist step {n}: tag the build, run the smoke tests against staging, "
        "check the error budget on the dashboard, post the change log in the release "
        "channel, wait for the on-call engineer to confirm, then promote the build. "
    )
    tagged = set()
    for n in range(3):
        body = f"Release checklist {tag} (part {n + 1}). " + "".join(
            steps.format(n=s) for s in range(1, 7)
        )
        tagged.add(server.remember(scope, body)["citation"]["entry_id"])
    for text in (
        "Release checklist: tag the build and run the smoke tests against staging.",
        "Release checklist: post the change log in the release channel.",
        "Release checklist: wait for the on-call engineer to confirm before promoting.",
        "Release checklist: check the error budget on the dashboard first.",
    ):
        server.remember(scope, text)
    wrong = []
    for budget in BUDGETS:
        _, items = server.prepare(scope, tag, max_bytes=budget)
        untagged = [i for i in items if cited(i) not in tagged]
        if untagged:
            wrong.append(f"{budget}: {len(untagged)} of {len(items)}")
    if not wrong:
        return Outcome("PASS", f"{len(BUDGETS)} budgets, tagged entries only")
    return Outcome(
        "FAIL", f"{len(wrong)} of {len(BUDGETS)} budgets cite untagged entries ({', '.join(wrong)})"
    )


CASES: list[tuple[str, Callable[[Server], Outcome]]] = [
    ("1 unknown identifier: empty", unknown_identifier),
    ("2 only match retired: empty", retired_match),
    ("3 CJK: the entry holding the term only", unreadable_script),
    ("4 five alike Experiences: the one named only", alike_experiences),
    ("5 shared token: exactly the five", shared_token),
    ("6 long tagged entries: tagged only at every budget", long_tagged),
]


def run_cases(server: Server, chosen: Sequence[int]) -> int:
    verdicts: Counter[str] = Counter()
    for number, (title, case) in enumerate(CASES, 1):
        if number not in chosen:
            continue
        outcome = case(server)
        verdicts[outcome.verdict] += 1
        print(f"{outcome.verdict} {title}: {outcome.got}", flush=True)
    print(
        f"SUMMARY {verdicts['PASS']} passed, {verdicts['FAIL']} failed, {verdicts['SKIP']} skipped"
    )
    return 1 if verdicts["FAIL"] else 0


def make_reviewer(store: Store) -> str:
    """A reviewer's personal token, from ``manage.py reviewer`` on the store."""
    done = subprocess.run(
        [sys.executable, "manage.py", "reviewer", "restraint-bench", "--password-stdin"],
        cwd=REPO_ROOT,
        env=store.env(),
        input=secrets.token_urlsafe(18) + "\n",
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    match = TOKEN_LINE.search(done.stdout)
    if done.returncode != 0 or not match:
        raise RuntimeError(f"manage.py reviewer failed:\n{done.stdout}\n{done.stderr}")
    return match.group(1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", help="an already running server's URL (PC_TOKEN: its token)")
    parser.add_argument("--reviewer-token", help="with --server: a reviewer's personal token")
    parser.add_argument("--engine", choices=("sqlite", "oceanbase"), default="sqlite")
    parser.add_argument("--home", help="the fresh data directory (default: a temporary one)")
    parser.add_argument(
        "--cases", type=int, nargs="+", default=list(range(1, len(CASES) + 1)), help="which"
    )
    args = parser.parse_args(argv)
    run = uuid.uuid4().hex[:8]

    def clients(url: str, agent_token: str | None, reviewer_token: str | None) -> Server:
        agent = Client.for_url(url, timeout=120, retry_stale=True, token=agent_token)
        reviewer = (
            Client.for_url(url, timeout=120, retry_stale=True, token=reviewer_token)
            if reviewer_token
            else None
        )
        return Server(agent, reviewer, run)

    if args.server:
        return run_cases(
            clients(args.server, os.environ.get("PC_TOKEN"), args.reviewer_token), args.cases
        )
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="pc-restraint-cases-"))
    store = open_store(args.engine, home)
    try:
        token = make_reviewer(store)
        with ServerProcess(store) as process:
            print(f"# {args.engine}, data directory {home}")
            return run_cases(clients(process.url, None, token), args.cases)
    finally:
        store.close(drop=True)


if __name__ == "__main__":
    sys.exit(main())
