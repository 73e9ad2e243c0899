"""LoCoMo retrieval bench: does the Context Pack cite the evidence, bare and inside prompts?

Stores every turn of the LoCoMo development conversations as one Memory entry
(``[<session date>] <speaker>: <text>``, one scope per conversation) through the HTTP API of
a real ``manage.py serve``, then asks every category 1-4 question through
``POST /v1/context/prepare``: once bare and once inside each committed coding-agent prompt
template (bench/prompts/locomo_templates.json). A pack *cites* a turn when an item of its
JSON carries that turn's (entry_id, entry_version_id).

Every prompt is asked twice. First *cold*: nothing captured yet, as a one-off prompt in a new
scope. Then *as the hook runs it*: the hook also captures each prompt into the scope's source
journal, and prepare does not search the terms that recur in the user's recent prompts
(powercontext.search.policy); here each prompt style is one pass over all questions, each
prompt captured after its pack is prepared. Runs measure on a fresh copy of the seeded
database, so no run inherits an earlier run's captured prompts.

In the same run, and from the same database, the naive admission rule is measured as the
baseline: every distinct query term is searched, and a hit is admitted only when it matches
at least max(2, ceil(n/4)) of the n distinct query terms (1 when n <= 2); the admitted hits,
best bm25 first, go through the same pure builder. The baseline runs in this process, so its
latency is in-process (no HTTP) and not comparable with the server's.

    .venv/bin/python bench/locomo.py --data <locomo-dev>        # the five dev conversations
    .venv/bin/python bench/locomo.py --data <locomo-dev> --ci   # one, bare + one template

Only ever tune on the LoCoMo dev split (the other five conversations are held out).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.served import (  # noqa: E402
    Client,
    ServerProcess,
    Store,
    pack_memory_citations,
    percentile,
)
from hooks.powercontext_hook import capture_source_id  # noqa: E402  (stdlib only)

DEFAULT_TEMPLATES = ROOT / "bench" / "prompts" / "locomo_templates.json"
SEED_FILE = "locomo_seed.json"
DATABASE_FILE = "powercontext.sqlite3"
SCORED_CATEGORIES = (1, 2, 3, 4)
BARE = "bare"


def running_server(home: Path) -> ServerProcess:
    """``manage.py serve`` on a free loopback port over ``home``, as a context manager. No
    server log: ``home`` may be a seed reused run after run."""
    return ServerProcess(Store("sqlite", home.resolve()), log_name=None)


def pack_citations(content: str | None) -> set[tuple[str, str]]:
    """(entry_id, entry_version_id) of every Memory item in a pack's JSON."""
    return {
        (citation["entry_id"], citation["entry_version_id"])
        for citation in pack_memory_citations(content)
    }


# --- the data --------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str  # as stored: "[<session date>] <speaker>: <text>"


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: int
    evidence: tuple[str, ...]  # dia ids


@dataclass(frozen=True)
class Conversation:
    name: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def scope_id(self) -> str:
        return f"locomo-{self.name}"


def _session_numbers(raw: dict) -> list[int]:
    found = (re.fullmatch(r"session_(\d+)", key) for key in raw)
    return sorted(int(match.group(1)) for match in found if match and raw[match.group(0)])


def load_conversation(path: Path) -> Conversation:
    raw = json.loads(path.read_text(encoding="utf-8"))
    conversation = raw.get("conversation", raw)
    turns = []
    for number in _session_numbers(conversation):
        date = conversation[f"session_{number}_date_time"]
        for turn in conversation[f"session_{number}"]:
            text = f"[{date}] {turn['speaker']}: {turn['text']}"
            turns.append(Turn(turn["dia_id"], text))
    questions = tuple(
        Question(path.stem, item["question"], item["category"], tuple(item.get("evidence", ())))
        for item in raw["qa"]
        if item.get("category") in SCORED_CATEGORIES
    )
    return Conversation(path.stem, tuple(turns), questions)


def load_templates(path: Path) -> list[tuple[str, str]]:
    templates = json.loads(path.read_text(encoding="utf-8"))["templates"]
    return [(item["name"], item["template"]) for item in templates]


def render(template: str, question: str) -> str:
    # replace, not format: questions and templates may hold braces.
    return template.replace("{question}", question)


# --- seeding ---------------------------------------------------------------------------


def seed(api: Client, conversations: Sequence[Conversation]) -> dict[str, dict[str, list[str]]]:
    """Remember every turn; map conversation -> dia_id -> [entry_id, entry_version_id]."""
    mapping: dict[str, dict[str, list[str]]] = {}
    for conversation in conversations:
        by_text: dict[str, list[str]] = {}
        turns: dict[str, list[str]] = {}
        for turn in conversation.turns:
            result = api.ok(
                "/v1/memory/remember",
                {"scope_id": conversation.scope_id, "kind": "note", "text": turn.text},
            )
            if result["entry"] is not None:
                citation = result["entry"]["citation"]
                by_text[turn.text] = [citation["entry_id"], citation["entry_version_id"]]
            # An identical earlier turn is a no-op: that entry stands for this turn too.
            turns[turn.dia_id] = by_text[turn.text]
        mapping[conversation.name] = turns
    return mapping


# --- the naive baseline (in process, same database) ------------------------------------


def naive_minimum(n: int) -> int:
    return 1 if n <= 2 else max(2, math.ceil(n / 4))


class NaiveBaseline:
    """Search every query term, admit hits matching max(2, ceil(n/4)) of them, build."""

    def __init__(self, home: Path):
        os.environ["POWERCONTEXT_HOME"] = str(home)
        os.environ["DJANGO_SETTINGS_MODULE"] = "server.settings"
        os.environ.pop("POWERCONTEXT_DATABASE_URL", None)
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from contextpack.builder import (
            MEMORY_WINDOW,
            ArtifactRef,
            MemoryCitation,
            MemoryHit,
            PreparedContextBuilder,
        )
        from memory.search_index import MEMORY_INDEX
        from memory.selectors import memory_head
        from memory.values import MEMORY_ARTIFACT_ID, MEMORY_FAMILY
        from powercontext.search import analyzer
        from powercontext.search.sqlite import SqliteSearchEngine
        from powercontext.snapshot import read_snapshot

        self._window = MEMORY_WINDOW
        self._ref = lambda revision: ArtifactRef(MEMORY_FAMILY, MEMORY_ARTIFACT_ID, revision)
        self._citation, self._hit = MemoryCitation, MemoryHit
        self._builder = PreparedContextBuilder()
        self._head, self._snapshot = memory_head, read_snapshot
        self._analyzer = analyzer
        self._engine, self._index = SqliteSearchEngine(), MEMORY_INDEX
        self._texts: dict[str, str] = {}

    def learn(self, version_id: str, text: str) -> None:
        self._texts[version_id] = text

    def prepare(self, *, scope_id: str, query: str, max_bytes: int) -> dict:
        terms = self._analyzer.query_terms(query)
        minimum = naive_minimum(len(terms))
        wanted = set(terms)
        with self._snapshot():
            head = self._head(scope_id=scope_id)
            ranked = self._engine.match(
                self._index, scope_id=scope_id, terms=terms, limit=1_000_000
            )
        admitted = []
        for hit in ranked:
            text = self._texts[str(hit.version)]
            if len(wanted.intersection(self._analyzer.tokens(text))) >= minimum:
                citation = self._citation(self._ref(head), hit.cited_id, str(hit.version))
                admitted.append(self._hit(citation=citation, text=text))
                if len(admitted) == self._window:
                    break
        if not admitted:
            return {"status": "empty", "content": None, "content_bytes": 0}
        prepared = self._builder.build(
            head=self._ref(head), memory_hits=admitted, max_bytes=max_bytes
        )
        return {
            "status": prepared.status,
            "content": prepared.content,
            "content_bytes": prepared.content_bytes,
        }


# --- measuring -------------------------------------------------------------------------


@dataclass
class Tally:
    questions: int = 0
    cites_all: int = 0
    cites_any: int = 0
    empty: int = 0
    content_bytes: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)

    def add(self, payload: dict, evidence: set[tuple[str, str]], latency_ms: float) -> None:
        cited = pack_citations(payload["content"])
        self.questions += 1
        self.cites_all += evidence <= cited
        self.cites_any += bool(evidence & cited)
        self.empty += payload["status"] == "empty"
        self.content_bytes.append(payload["content_bytes"])
        self.latency_ms.append(latency_ms)

    def row(self) -> dict[str, float]:
        share = 100.0 / max(self.questions, 1)
        return {
            "questions": self.questions,
            "all_pct": self.cites_all * share,
            "any_pct": self.cites_any * share,
            "mean_bytes": statistics.fmean(self.content_bytes or [0]),
            "p95_bytes": percentile(self.content_bytes, 0.95),
            "empty_pct": self.empty * share,
            "p50_ms": percentile(self.latency_ms, 0.50),
            "p95_ms": percentile(self.latency_ms, 0.95),
        }


def format_table(rows: list[tuple[str, str, dict[str, float]]]) -> str:
    header = (
        "| policy | prompt | questions | cites all | cites any | mean bytes | p95 bytes "
        "| empty | p50 ms | p95 ms |"
    )
    lines = [header, "|" + "---|" * 10]
    for policy, variant, row in rows:
        lines.append(
            f"| {policy} | {variant} | {row['questions']} | {row['all_pct']:.1f} % "
            f"| {row['any_pct']:.1f} % | {row['mean_bytes']:.0f} | {row['p95_bytes']:.0f} "
            f"| {row['empty_pct']:.1f} % | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} |"
        )
    return "\n".join(lines)


def seeded_home(home: Path, conversations: Sequence[Conversation]) -> dict:
    """Seed ``home`` with every conversation not seeded there yet; the turn mapping."""
    seed_path = home / SEED_FILE
    mapping = json.loads(seed_path.read_text()) if seed_path.exists() else {}
    missing = [c for c in conversations if c.name not in mapping]
    if missing:
        started = time.perf_counter()
        with running_server(home) as server:
            api = server.client(timeout=60, retry_stale=True)
            mapping.update(seed(api, missing))
            api.close()
        seed_path.write_text(json.dumps(mapping))
        print(
            f"# seeded {len(missing)} conversation(s) over HTTP in "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
    return mapping


def fresh_copy(home: Path) -> Path:
    """A new data directory holding a copy of ``home``'s database. Each run captures
    prompts; measuring on a copy keeps a reused seed free of an earlier run's history."""
    work = Path(tempfile.mkdtemp(prefix="pc-locomo-run-"))
    source = sqlite3.connect(home / DATABASE_FILE)
    target = sqlite3.connect(work / DATABASE_FILE)
    with target:
        source.backup(target)
    source.close()
    target.close()
    return work


def capture_body(scope_id: str, session: str, turn: int, prompt: str) -> dict:
    """``POST /v1/sources/content`` as the hook sends it for one prompt."""
    return {
        "scope_id": scope_id,
        "source_id": capture_source_id(scope_id, session, f"turn_id:{turn}", prompt),
        "content": prompt,
    }


def run(args: argparse.Namespace) -> int:
    paths = sorted(Path(args.data).glob("*.json"))
    if args.conversations:
        paths = [path for path in paths if path.stem in args.conversations]
    conversations = [load_conversation(path) for path in paths]
    if not conversations:
        print(f"no conversations in {args.data}", file=sys.stderr)
        return 2
    templates = load_templates(Path(args.templates))
    if args.templates_limit is not None:
        templates = templates[: args.templates_limit]
    variants = [(BARE, "{question}"), *templates]

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="pc-locomo-"))
    home.mkdir(parents=True, exist_ok=True)
    mapping = seeded_home(home, conversations)
    work = fresh_copy(home)
    turns = sum(len(c.turns) for c in conversations)
    print(
        f"# {len(conversations)} conversation(s), {turns} turns; seed {home}, run {work}",
        flush=True,
    )

    cold = {name: Tally() for name, _ in variants}
    captured = {name: Tally() for name, _ in variants}
    # The same, per conversation: a rule that reads the captured prompts is checked with
    # each conversation left out in turn (docs/relevance.md, section 6).
    captured_in = {(c.name, name): Tally() for c in conversations for name, _ in variants}
    naive = {name: Tally() for name, _ in variants}
    unscorable = 0
    with running_server(work) as server:
        api = server.client(timeout=60, retry_stale=True)
        baseline = NaiveBaseline(work)
        for conversation in conversations:
            for turn in conversation.turns:
                baseline.learn(mapping[conversation.name][turn.dia_id][1], turn.text)

        def evidence_of(conversation: Conversation, question: Question) -> set:
            turn_ids = mapping[conversation.name]
            return {tuple(turn_ids[d]) for d in question.evidence if d in turn_ids}

        def prepare(conversation: Conversation, prompt: str) -> tuple[dict, float]:
            body = {"scope_id": conversation.scope_id, "query": prompt, "max_bytes": args.max_bytes}
            payload, seconds = api.timed("/v1/context/prepare", body)
            return payload, seconds * 1000

        # 1. Cold: no prompt captured yet, every prompt is a one-off. The naive rule runs
        #    here too: it has no notion of prompt history.
        for conversation in conversations:
            for question in conversation.questions[: args.questions_limit]:
                evidence = evidence_of(conversation, question)
                if not evidence:
                    unscorable += 1  # LoCoMo has a few questions citing no existing turn
                    continue
                for name, template in variants:
                    prompt = render(template, question.text)
                    payload, elapsed = prepare(conversation, prompt)
                    cold[name].add(payload, evidence, elapsed)
                    began = time.perf_counter()
                    payload = baseline.prepare(
                        scope_id=conversation.scope_id, query=prompt, max_bytes=args.max_bytes
                    )
                    naive[name].add(payload, evidence, (time.perf_counter() - began) * 1000)

        # 2. As the hook runs: each prompt is also captured into the source journal, so
        #    later prompts see the user's earlier ones. A user writes in one style for a
        #    while: each prompt style is one pass over every question, in order, and a new
        #    style starts with the previous style's prompts as its history. The capture is
        #    sent after prepare (the hook sends both at once; prepare ignores the prompt's
        #    own capture either way).
        for name, template in variants:
            for conversation in conversations:
                for turn, question in enumerate(conversation.questions[: args.questions_limit]):
                    prompt = render(template, question.text)
                    payload, elapsed = prepare(conversation, prompt)
                    evidence = evidence_of(conversation, question)
                    if evidence:
                        captured[name].add(payload, evidence, elapsed)
                        captured_in[conversation.name, name].add(payload, evidence, elapsed)
                    api.ok(
                        "/v1/sources/content",
                        capture_body(conversation.scope_id, f"locomo-{name}", turn, prompt),
                        status=202,
                    )
        api.close()

    rows = [("tuned, cold (HTTP)", name, cold[name].row()) for name, _ in variants]
    rows += [("tuned, prompts captured (HTTP)", name, captured[name].row()) for name, _ in variants]
    rows += [("naive (in-process)", name, naive[name].row()) for name, _ in variants]
    print(f"# max_bytes {args.max_bytes}; {unscorable} question(s) without a stored evidence turn")
    print(format_table(rows))
    for label, tallies in (("cold", cold), ("prompts captured", captured)):
        bare_any = tallies[BARE].row()["any_pct"]
        worst = min(tallies[name].row()["any_pct"] for name, _ in variants)
        worst_bytes = max(tallies[name].row()["mean_bytes"] for name, _ in variants)
        print(
            f"# tuned, {label}: bare any-evidence {bare_any:.1f} % (goal >= 65), worst prompt "
            f"{worst:.1f} % (goal >= bare - 5), worst mean content_bytes {worst_bytes:.0f} "
            "(goal <= 4000)"
        )
    bare = cold[BARE].row()
    wrapped = [
        f"{name} cold {cold[name].row()['any_pct']:.1f} % / captured "
        f"{captured[name].row()['any_pct']:.1f} %"
        for name, _ in variants
        if name != BARE
    ]
    print(
        f"SUMMARY bare any {bare['any_pct']:.1f} % / all {bare['all_pct']:.1f} % (cold)"
        + "".join(f"; wrapped {line} (any)" for line in wrapped)
    )
    if args.json_out:
        per_conversation = [
            {"policy": "tuned, prompts captured (HTTP)", "prompt": v, "conversation": c, **t.row()}
            for (c, v), t in captured_in.items()
        ]
        Path(args.json_out).write_text(
            json.dumps(
                [{"policy": p, "prompt": v, **r} for p, v, r in rows] + per_conversation, indent=2
            )
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="LoCoMo JSON directory")
    parser.add_argument("--templates", default=str(DEFAULT_TEMPLATES))
    parser.add_argument(
        "--home",
        help="where the seeded database is kept (default: a fresh temporary directory); "
        "a home seeded by an earlier run is reused, and each run measures on a copy of it",
    )
    parser.add_argument("--conversations", nargs="*", help="conversation ids (file stems)")
    parser.add_argument("--questions-limit", type=int, default=None)
    parser.add_argument("--templates-limit", type=int, default=None)
    parser.add_argument("--max-bytes", type=int, default=8000, help="as the hooks send")
    parser.add_argument(
        "--json-out",
        help="also write the table rows as JSON here, and each conversation's captured rows",
    )
    parser.add_argument(
        "--ci",
        action="store_true",
        help="tiny run: one conversation, 20 questions, bare + one template",
    )
    args = parser.parse_args(argv)
    if args.ci:
        args.conversations = args.conversations or ["30"]
        args.questions_limit = args.questions_limit or 20
        args.templates_limit = 1 if args.templates_limit is None else args.templates_limit
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
