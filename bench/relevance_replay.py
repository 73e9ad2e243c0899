"""The relevance decision replayed in process: the restraint figures of both dev sets in
about a minute, with the decision's thresholds overridable, so that a rule change is
measured on both kinds of data at once before it goes through the real server
(bench/restraint.py, bench/locomo.py, which stay the figures of record).

    .venv/bin/python bench/relevance_replay.py --files '<dev>/coding-memory-dev/*.json' \\
        --locomo <dev>/locomo-dev --home /tmp/replay-home
    .venv/bin/python bench/relevance_replay.py ... --set WORD_COVERAGE=0.3 \\
        --set WORDS_WITH_MEANING=0.2          # the same data, other thresholds

Every scope is filled once in ``--home`` (kept: a second run with the same home reads
the same entries and only asks): each coding-memory project, a copy of it with each
planted note (bench/restraint.py's notes and 30-prompt spread), each LoCoMo conversation
(bench/locomo.py's turns). Then every prompt goes through ``prepare_context`` with
``--max-bytes`` (the pack as the server builds it, without HTTP and without capturing
the prompt: the *cold* pass), and the figures are bench/restraint.py's: coding precision
per prompt, recall_any, items, no-answer empties; LoCoMo bare any/all evidence and the
first template's any; cross-conversation empties; each planted note's reach. One more of
its own: the share of packs that agent follow-ups (``bench/prompts/follow_ups.json``: "fix
it", "what failed?", written for this bench) get in each coding project's scope, where
nothing answers them. ``--set
NAME=VALUE`` replaces a number of the decision (``powercontext.search.relevance.numbers``)
for the run;
``--cap-unanchored N`` measures a rule the decision does not have: a pack keeps at most N
admitted candidates that hold no anchor of the prompt (docs/relevance-history.md).
``--sweep NAME=V1,V2,...`` replays once for each value of one number, the scopes filled
once, and prints a row of figures for each: where the decision's targets pull against
each other (docs/relevance-history.md, "Where the targets conflict").

    .venv/bin/python bench/relevance_replay.py ... --sweep ANSWERED_SIMILARITY=0.3,0.35,0.4
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.locomo import DEFAULT_TEMPLATES, load_conversation, load_templates, render  # noqa: E402
from bench.restraint import DEV_PAIRS, PLANTED_KINDS, planted_notes, spread  # noqa: E402
from bench.served import pack_memory_citations  # noqa: E402
from bench.vector_bench import setup_django  # noqa: E402

PLANTED_PROMPTS = 30
# What a user says to the agent about its last step ("fix it", "what failed?"): asked in
# each coding project's scope, where nothing answers them.
FOLLOW_UPS = Path(__file__).with_name("prompts") / "follow_ups.json"


def overrides(pairs: Sequence[str], option: str = "--set") -> dict[str, float]:
    """``NAME=VALUE`` pairs, each naming a number of the relevance decision
    (``relevance.numbers``; ``option``: the command-line option they came with, for the
    error)."""
    from powercontext.search.relevance import numbers

    found: dict[str, float] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        current = getattr(numbers, name, None)
        if not name.isupper() or isinstance(current, bool) or not isinstance(current, int | float):
            raise SystemExit(f"{option} {pair}: {name} is not a number of the relevance decision")
        try:
            number = float(value)
        except ValueError:
            raise SystemExit(f"{option} {pair}: {value!r} is not a number") from None
        found[name] = type(current)(number) if isinstance(current, int) else number
    return found


def cap_unanchored(count: int) -> None:
    """Make ``relevance.rules.judge`` leave out the admitted candidates past the
    ``count``-th that hold no anchor (a measurement: the product has no such cap)."""
    from powercontext.search.relevance import rules

    judge = rules.judge

    def capped(candidates: Any, facts: Any) -> list[rules.Judgement]:
        kept = 0
        judged = []
        for judgement in judge(candidates, facts):
            if judgement.admitted and judgement.verdict is not rules.Verdict.ANCHORED:
                kept += 1
                if kept > count:
                    judgement = rules.Judgement(judgement.key, rules.Verdict.FAR)
            judged.append(judgement)
        return judged

    rules.judge = capped


def fill(home: Path, scope_id: str, entries: Sequence[tuple[str, str, str]]) -> dict[str, str]:
    """{file id: entry id} of ``entries`` (file id, kind, text) remembered in ``scope_id``,
    once: the map is kept in ``home`` beside the data."""
    from memory.services import memory_remember

    kept = home / f"replay-{scope_id.replace(':', '_').replace('/', '_')}.json"
    if kept.exists():
        return dict(json.loads(kept.read_text(encoding="utf-8")))
    by_text: dict[str, str] = {}
    ids: dict[str, str] = {}
    for file_id, kind, text in entries:
        result = memory_remember(scope_id=scope_id, kind=kind, text=text)
        if result.entry is not None:
            by_text[text] = result.entry.citation.entry_id
        ids[file_id] = by_text[text]
    kept.write_text(json.dumps(ids), encoding="utf-8")
    return ids


def packed(scope_id: str, query: str, max_bytes: int, files: dict[str, str]) -> list[str]:
    """The file ids a pack cites, in pack order."""
    from contextpack.application import prepare_context

    prepared = prepare_context(scope_id=scope_id, query=query, max_bytes=max_bytes)
    cited = [c["entry_id"] for c in pack_memory_citations(prepared.content)]
    return [files.get(entry_id, entry_id) for entry_id in dict.fromkeys(cited)]


def _mean(values: Sequence[float]) -> float:
    return 100 * statistics.fmean(values) if values else float("nan")


def replay(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(args.home)
    projects = [json.loads(Path(f).read_text(encoding="utf-8")) for f in sorted(args.file_paths)]
    conversations = {p.stem: load_conversation(p) for p in sorted(Path(args.locomo).glob("*.json"))}
    template = load_templates(Path(args.templates))[0][1]
    figures: dict[str, Any] = {}
    coding: list[tuple[dict, list[str]]] = []
    planted: dict[str, int] = dict.fromkeys(PLANTED_KINDS, 0)
    follow_ups = json.loads(FOLLOW_UPS.read_text(encoding="utf-8"))["prompts"][: args.limit]
    followed: list[bool] = []
    for project in projects:
        entries = [(e["id"], e["kind"], e["text"]) for e in project["entries"]]
        scope = f"replay-{project['project']}"
        ids = fill(home, scope, entries)
        files = {entry_id: file_id for file_id, entry_id in reversed(ids.items())}
        prompts = project["prompts"][: args.limit]
        coding += [(p, packed(scope, p["prompt"], args.max_bytes, files)) for p in prompts]
        followed += [bool(packed(scope, text, args.max_bytes, files)) for text in follow_ups]
        for kind, note in planted_notes(project).items():
            scope = f"replay-{project['project']}-planted-{kind}"
            ids = fill(home, scope, [*entries, ("planted", "fact", note)])
            files = {entry_id: file_id for file_id, entry_id in reversed(ids.items())}
            for prompt in spread(project["prompts"], args.planted_prompts):
                planted[kind] += "planted" in packed(scope, prompt["prompt"], args.max_bytes, files)
    answerable = [(p, pack) for p, pack in coding if p["relevant"]]
    relevant = [len(set(pack) & set(p["relevant"])) for p, pack in answerable]
    figures["coding precision per prompt"] = _mean(
        [hit / len(pack) for hit, (_, pack) in zip(relevant, answerable, strict=True) if pack]
    )
    figures["coding recall_any"] = _mean([hit > 0 for hit in relevant])
    figures["coding items per pack"] = statistics.fmean([len(p) for _, p in answerable] or [0])
    figures["coding no-answer empty"] = _mean([not pack for p, pack in coding if not p["relevant"]])
    figures["follow-ups with a pack"] = _mean(followed)

    turn_ids: dict[str, dict[str, str]] = {}
    for name, conversation in conversations.items():
        entries = [(t.dia_id, "fact", t.text) for t in conversation.turns]
        turn_ids[name] = fill(home, f"replay-locomo-{name}", entries)
    for variant, form in (("bare", "{question}"), ("wrapped", template)):
        hits_any, hits_all = [], []
        for name, conversation in conversations.items():
            files = {entry_id: dia for dia, entry_id in reversed(turn_ids[name].items())}
            for question in conversation.questions[: args.limit]:
                evidence = {d for d in question.evidence if d in turn_ids[name]}
                if not evidence:
                    continue
                query = render(form, question.text)
                pack = set(packed(f"replay-locomo-{name}", query, args.max_bytes, files))
                hits_any.append(bool(evidence & pack))
                hits_all.append(evidence <= pack)
        figures[f"LoCoMo {variant} any"] = _mean(hits_any)
        if variant == "bare":
            figures["LoCoMo bare all"] = _mean(hits_all)
    empty = []
    for pair in args.pairs.split(","):
        asked, stored = pair.split(":")
        if asked not in conversations or stored not in conversations:
            continue
        files = {entry_id: dia for dia, entry_id in turn_ids[stored].items()}
        for question in conversations[asked].questions[: args.limit]:
            empty.append(
                not packed(f"replay-locomo-{stored}", question.text, args.max_bytes, files)
            )
    figures["cross-conversation empty"] = _mean(empty)
    for kind in PLANTED_KINDS:
        figures[f"planted {kind} reach"] = planted[kind]
    return figures


def dev_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The options naming the dev data and where its scopes are kept (this bench's and
    bench/focus_gate.py's)."""
    parser.add_argument("--files", required=True, help="coding-memory project JSONs (a glob)")
    parser.add_argument("--locomo", required=True, help="a directory of LoCoMo JSONs")
    parser.add_argument("--pairs", default=DEV_PAIRS, help="asked:stored conversations")
    parser.add_argument("--templates", default=str(DEFAULT_TEMPLATES))
    parser.add_argument("--home", help="where the scopes are kept (default: a new directory)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    dev_data_arguments(parser)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--sweep", metavar="NAME=V1,V2,...", help="one row for each value")
    parser.add_argument("--cap-unanchored", type=int, metavar="N")
    parser.add_argument("--max-bytes", type=int, default=8000)
    parser.add_argument("--planted-prompts", type=int, default=PLANTED_PROMPTS)
    parser.add_argument("--limit", type=int, default=None, help="prompts/questions per file")
    parser.add_argument("--ci", action="store_true", help="5 prompts a file, 5 planted")
    args = parser.parse_args(argv)
    args.file_paths = sorted(glob.glob(args.files))
    if not args.file_paths:
        raise SystemExit(f"--files {args.files}: no file")
    if args.ci:
        args.limit, args.planted_prompts = 5, 5
    args.home = args.home or tempfile.mkdtemp(prefix="pc-replay-")
    Path(args.home).mkdir(parents=True, exist_ok=True)
    setup_django(Path(args.home), None)
    from powercontext.search.relevance import numbers

    for name, value in overrides(args.set).items():
        setattr(numbers, name, value)
        print(f"# {name} = {value}", flush=True)
    if args.cap_unanchored is not None:
        cap_unanchored(args.cap_unanchored)
        print(f"# at most {args.cap_unanchored} admitted without an anchor", flush=True)
    started = time.perf_counter()
    if args.sweep:
        sweep(args)
        print(f"# home {args.home}; {time.perf_counter() - started:.0f} s")
        return
    figures = replay(args)
    print(f"# home {args.home}; {time.perf_counter() - started:.0f} s")
    for name, value in figures.items():
        print(f"{name}: {shown(name, value)}")


def shown(name: str, value: Any) -> str:
    """A figure as printed: a share with one decimal and %, items per pack with two."""
    if "items" in name:
        return f"{value:.2f}"
    return f"{value:.1f} %" if isinstance(value, float) else str(value)


def sweep(args: argparse.Namespace) -> None:
    """A Markdown table of the figures for each value of ``args.sweep`` (NAME=V1,V2,...),
    the other numbers as they are (or as ``--set`` put them)."""
    from powercontext.search.relevance import numbers

    name, _, values = args.sweep.partition("=")
    settings = [
        overrides([f"{name}={value}"], "--sweep")[name] for value in values.split(",") if value
    ]
    if not settings:
        raise SystemExit(f"--sweep {args.sweep}: no value")
    kept = getattr(numbers, name)
    rows = []
    try:
        for value in settings:
            setattr(numbers, name, value)
            rows.append((value, replay(args)))
            print(f"# {name} = {value} done", flush=True)
    finally:
        setattr(numbers, name, kept)
    columns = list(rows[0][1])
    print(f"| {name} | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for value, figures in rows:
        print(f"| {value} | " + " | ".join(shown(c, figures[c]) for c in columns) + " |")


if __name__ == "__main__":
    main()
