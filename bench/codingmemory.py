"""Coding-memory retrieval bench: does the pack hold the entries a coding agent needs?

Each project file (one scope of memory entries a coding agent keeps, and whole prompts as a
pre-prompt hook sends them, each with the entries a careful engineer would want surfaced)
is loaded into a fresh scope through the HTTP API of one real ``manage.py serve``: one
``POST /v1/memory/remember {scope_id, kind, text}`` per entry, in file order (a no-op
remember stands for the earlier identical entry). Then every prompt is sent whole to
``POST /v1/context/prepare {max_bytes: 8000}`` and ``POST /v1/memory/search {limit: 8}``.

Two passes, each on scopes of its own: *cold* (no prompt captured: a new scope, capture off)
and *captured* (each prompt captured into the scope's source journal after its pack, as the
hook does, so later packs see the scope's prompt history).

Scores, over answerable prompts, per prompt type and overall: recall@8 (at least one
relevant entry in the pack, or among the 8 search hits), and for no-answer prompts the mean
number of items returned. ``empty`` counts answerable prompts whose pack or search came
back empty.

    .venv/bin/python bench/codingmemory.py --files '<dir>/*.json'
    .venv/bin/python bench/codingmemory.py --files '<dir>/*.json' --ci   # 10 prompts a file

The file format: ``{"project", "entries": [{"id", "kind", "text"}], "prompts": [{"id",
"prompt", "relevant": [entry ids], "type"}]}``; ``type`` ``no-answer`` has no relevant entry.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import tempfile
from collections import defaultdict
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

NO_ANSWER = "no-answer"
PASSES = ("cold", "captured")
OVERALL = "overall"


def pack_entry_ids(content: str | None) -> list[str]:
    """Entry ids a pack cites, in pack order."""
    return [citation["entry_id"] for citation in pack_memory_citations(content)]


@dataclass
class Tally:
    """One prompt type's (or every prompt's) results in one pass."""

    answerable: int = 0
    pack_hits: int = 0
    search_hits: int = 0
    empty_packs: int = 0
    empty_searches: int = 0
    no_answer: int = 0
    no_answer_pack_items: int = 0
    no_answer_search_items: int = 0
    content_bytes: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)

    def add(self, relevant: set[str], pack: list[str], search: list[str]) -> None:
        if relevant:
            self.answerable += 1
            self.pack_hits += bool(relevant & set(pack))
            self.search_hits += bool(relevant & set(search))
            self.empty_packs += not pack
            self.empty_searches += not search
        else:
            self.no_answer += 1
            self.no_answer_pack_items += len(pack)
            self.no_answer_search_items += len(search)

    def row(self) -> dict[str, float]:
        share = 100.0 / max(self.answerable, 1)
        per_no_answer = 1.0 / max(self.no_answer, 1)
        return {
            "answerable": self.answerable,
            "pack_recall_pct": self.pack_hits * share,
            "search_recall_pct": self.search_hits * share,
            "empty_packs": self.empty_packs,
            "empty_searches": self.empty_searches,
            "no_answer": self.no_answer,
            "no_answer_pack_items": self.no_answer_pack_items * per_no_answer,
            "no_answer_search_items": self.no_answer_search_items * per_no_answer,
            "mean_bytes": statistics.fmean(self.content_bytes or [0]),
            "p50_ms": percentile(self.latency_ms, 0.50) if self.latency_ms else 0.0,
        }


def load_project(api: Client, project: dict, scope_id: str) -> dict[str, str]:
    """Remember every entry in file order; the file's entry id -> the server's entry_id
    (an identical entry's is the earlier one's)."""
    by_text: dict[str, str] = {}
    server_ids: dict[str, str] = {}
    for entry in project["entries"]:
        result = api.ok(
            "/v1/memory/remember",
            {"scope_id": scope_id, "kind": entry["kind"], "text": entry["text"]},
        )
        if result["entry"] is not None:
            by_text[entry["text"]] = result["entry"]["citation"]["entry_id"]
        server_ids[entry["id"]] = by_text[entry["text"]]
    return server_ids


def run_pass(
    api: Client, projects: Sequence[dict], name: str, args: argparse.Namespace
) -> dict[str, Tally]:
    tallies: defaultdict[str, Tally] = defaultdict(Tally)
    for project in projects:
        scope_id = f"codingmemory-{name}-{project['project']}"
        server_ids = load_project(api, project, scope_id)
        for turn, prompt in enumerate(project["prompts"][: args.prompts_limit]):
            body = {"scope_id": scope_id, "query": prompt["prompt"], "max_bytes": args.max_bytes}
            payload, seconds = api.timed("/v1/context/prepare", body)
            if name == "captured":
                source_id = capture_source_id(
                    scope_id, "codingmemory", f"turn_id:{turn}", prompt["prompt"]
                )
                api.ok(
                    "/v1/sources/content",
                    {"scope_id": scope_id, "source_id": source_id, "content": prompt["prompt"]},
                    status=202,
                )
            searched = api.ok(
                "/v1/memory/search",
                {"scope_id": scope_id, "query": prompt["prompt"], "limit": args.limit},
            )
            pack = pack_entry_ids(payload["content"])
            search = [hit["citation"]["entry_id"] for hit in searched["hits"]]
            relevant = {server_ids[entry_id] for entry_id in prompt["relevant"]}
            for key in (prompt["type"], OVERALL):
                tallies[key].add(relevant, pack, search)
                tallies[key].content_bytes.append(payload["content_bytes"])
                tallies[key].latency_ms.append(seconds * 1000)
    return tallies


def format_table(results: dict[str, dict[str, Tally]]) -> str:
    header = (
        "| pass | prompts | answerable | pack recall@8 | search recall@8 | empty packs "
        "| empty searches | no-answer pack items | no-answer search items | mean bytes | p50 ms |"
    )
    lines = [header, "|" + "---|" * 11]
    for name, tallies in results.items():
        for key in [*sorted(k for k in tallies if k != OVERALL), OVERALL]:
            row = tallies[key].row()
            lines.append(
                f"| {name} | {key} | {row['answerable']} | {row['pack_recall_pct']:.1f} % "
                f"| {row['search_recall_pct']:.1f} % | {row['empty_packs']} "
                f"| {row['empty_searches']} | {row['no_answer_pack_items']:.2f} "
                f"| {row['no_answer_search_items']:.2f} | {row['mean_bytes']:.0f} "
                f"| {row['p50_ms']:.1f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", required=True, help="project JSON files or globs")
    parser.add_argument("--passes", nargs="+", choices=PASSES, default=list(PASSES))
    parser.add_argument("--prompts-limit", type=int, default=None, help="prompts per file")
    parser.add_argument("--max-bytes", type=int, default=8000, help="as the hooks send")
    parser.add_argument("--limit", type=int, default=8, help="search hits (recall@limit)")
    parser.add_argument("--json-out", help="also write the table rows as JSON here")
    parser.add_argument("--ci", action="store_true", help="tiny run: 10 prompts a file")
    args = parser.parse_args(argv)
    if args.ci and args.prompts_limit is None:
        args.prompts_limit = 10
    paths = sorted({p for pattern in args.files for p in glob.glob(pattern) or [pattern]})
    projects = [json.loads(Path(path).read_text(encoding="utf-8")) for path in paths]
    if not projects:
        print(f"no project files in {args.files}", file=sys.stderr)
        return 2

    home = Path(tempfile.mkdtemp(prefix="pc-codingmemory-"))
    results: dict[str, dict[str, Tally]] = {}
    with ServerProcess(Store("sqlite", home), log_name=None) as server:
        api = server.client(timeout=60, retry_stale=True)
        for name in args.passes:
            results[name] = run_pass(api, projects, name, args)
        api.close()
    entries = sum(len(project["entries"]) for project in projects)
    print(f"# {len(projects)} project(s), {entries} entries; data directory {home}")
    print(format_table(results))
    for name, tallies in results.items():
        row = tallies[OVERALL].row()
        print(
            f"SUMMARY {name}: pack recall@8 {row['pack_recall_pct']:.1f} %, search recall@8 "
            f"{row['search_recall_pct']:.1f} %, empty packs {row['empty_packs']}, empty "
            f"searches {row['empty_searches']}, no-answer pack items "
            f"{row['no_answer_pack_items']:.2f}"
        )
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {
                    name: {key: t.row() for key, t in tallies.items()}
                    for name, tallies in results.items()
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
