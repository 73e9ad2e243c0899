"""The relevance decision's numbers chosen leave-one-project-out, in process: choose a value
on six coding-memory projects, score it on the seventh, for each of the seven; the same for
the LoCoMo conversations (choose on four, score the fifth). One command prints the table.

    .venv/bin/python bench/relevance_fit.py --files '<dev>/coding-memory-dev/*.json' \\
        --locomo <dev>/locomo-dev --home /tmp/replay-home            # the shipped numbers
    .venv/bin/python bench/relevance_fit.py ... --choose STRONG_SIMILARITY=0.34,0.37,0.4

Without ``--choose`` it prints the shipped decision's figures per project and per prompt
type, beside search@8's (``memory_search``, limit 8, as codingbench.py asks): recall_any,
precision per prompt (all prompts, and wrapped ones: the dev set's ``boilerplate`` type),
no-answer empties; per conversation, LoCoMo bare any / all and wrapped any (the first
template), and cross-conversation empties.

With ``--choose NAME=V1,V2,...`` (a number of ``powercontext.search.relevance.numbers``) it
replays once per value (the scopes filled once, in ``--home``: bench/relevance_replay.py's)
and, for each project left out, chooses the value with the best ``objective`` on the six others and
scores the seventh with it; then the same over the conversations. The table gives each
held-out project's figures at the value chosen without it, at the shipped value, and the
mean and the worst held out. With ``--changes`` it lists too, for each other value, every
prompt and question whose outcome differs from the shipped value's (a coding pack, a
LoCoMo answer found or lost, a cross-conversation pack emptied or filled): what a rule
costs and gains, prompt by prompt. A value is worth shipping when it is chosen on (nearly) every
fold and the held-out figures do not fall: a value that raises the six it was chosen on and
lowers the one left out does not ship (docs/relevance.md, "How its numbers are chosen").

With ``--record`` it fits every number of ``bench/relevance_numbers.json`` over the grid the
record gives it (``--only A,B``: those), the run at the shipped values asked once for all,
and writes back each number's folds and its figures per conversation, to a hundredth, and
the digests of the data; the value the method ships is read from them
(bench/relevance_record.py's ``ships``; about 70 replays, 45 minutes on
two processes, each given its own ``--home`` copy and half of the numbers):

    .venv/bin/python bench/relevance_fit.py --files ... --locomo ... --home /tmp/fit --record
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import relevance_record  # noqa: E402
from bench.locomo import load_conversation, load_templates, render  # noqa: E402
from bench.relevance_record import locomo_objective, objective  # noqa: E402
from bench.relevance_replay import dev_data_arguments, fill, overrides, packed  # noqa: E402
from bench.vector_bench import setup_django  # noqa: E402

WRAPPED = "boilerplate"
NO_ANSWER = "no-answer"


@dataclass(frozen=True)
class Asked:
    """One coding prompt's outcome: its project, type, relevant file ids, the pack's and
    search@8's file ids."""

    project: str
    kind: str
    relevant: frozenset[str]
    pack: tuple[str, ...]
    search: tuple[str, ...]
    prompt: str = ""


@dataclass(frozen=True)
class Questioned:
    """One LoCoMo question's outcome: its conversation, and the pack's evidence found
    (``bare_any``/``bare_all``, ``wrapped_any``), or for a question asked in another
    conversation's scope (``cross``), whether the pack was empty."""

    conversation: str
    bare_any: bool | None = None
    bare_all: bool | None = None
    wrapped_any: bool | None = None
    cross_empty: bool | None = None
    question: str = ""


def searched(scope_id: str, query: str, files: dict[str, str]) -> tuple[str, ...]:
    """The file ids of search's first 8 hits (``POST /v1/memory/search {limit: 8}``)."""
    from memory.selectors import memory_search

    hits = memory_search(scope_id=scope_id, query=query, mode="auto", limit=8).hits
    ids = [files.get(hit.citation.entry_id, hit.citation.entry_id) for hit in hits]
    return tuple(dict.fromkeys(ids))


def coding(args: argparse.Namespace, *, with_search: bool) -> list[Asked]:
    """Every prompt of every project, packed (and searched)."""
    home = Path(args.home)
    asked: list[Asked] = []
    for path in args.file_paths:
        project = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = [(e["id"], e["kind"], e["text"]) for e in project["entries"]]
        scope = f"replay-{project['project']}"
        ids = fill(home, scope, entries)
        files = {entry_id: file_id for file_id, entry_id in reversed(ids.items())}
        for prompt in project["prompts"][: args.limit]:
            text = prompt["prompt"]
            asked.append(
                Asked(
                    project=project["project"],
                    kind=prompt.get("type", ""),
                    relevant=frozenset(prompt["relevant"]),
                    pack=tuple(packed(scope, text, args.max_bytes, files)),
                    search=searched(scope, text, files) if with_search else (),
                    prompt=text,
                )
            )
    return asked


def locomo(args: argparse.Namespace) -> list[Questioned]:
    """Every LoCoMo question bare and wrapped in its conversation, and asked in the other
    conversation of its ``--pairs`` pair."""
    if not args.locomo:
        return []
    home = Path(args.home)
    conversations = {p.stem: load_conversation(p) for p in sorted(Path(args.locomo).glob("*.json"))}
    template = load_templates(Path(args.templates))[0][1]
    turn_ids = {
        name: fill(home, f"replay-locomo-{name}", [(t.dia_id, "fact", t.text) for t in c.turns])
        for name, c in conversations.items()
    }
    found: list[Questioned] = []
    for name, conversation in conversations.items():
        files = {entry_id: dia for dia, entry_id in reversed(turn_ids[name].items())}
        for question in conversation.questions[: args.questions or args.limit]:
            evidence = {d for d in question.evidence if d in turn_ids[name]}
            if not evidence:
                continue
            scope = f"replay-locomo-{name}"
            bare = set(packed(scope, question.text, args.max_bytes, files))
            wrapped = set(packed(scope, render(template, question.text), args.max_bytes, files))
            found.append(
                Questioned(
                    name,
                    bool(evidence & bare),
                    evidence <= bare,
                    bool(evidence & wrapped),
                    question=question.text,
                )
            )
    for pair in args.pairs.split(","):
        asked, stored = pair.split(":")
        if asked not in conversations or stored not in conversations:
            continue
        files = {entry_id: dia for dia, entry_id in turn_ids[stored].items()}
        for question in conversations[asked].questions[: args.questions or args.limit]:
            pack = packed(f"replay-locomo-{stored}", question.text, args.max_bytes, files)
            found.append(Questioned(stored, cross_empty=not pack, question=question.text))
    return found


def _share(values: Sequence[bool]) -> float | None:
    return 100 * statistics.fmean(values) if values else None


def _precision(asked: Sequence[Asked], pick: Callable[[Asked], Sequence[str]]) -> float | None:
    shares = [len(set(pick(a)) & a.relevant) / len(pick(a)) for a in asked if pick(a)]
    return 100 * statistics.fmean(shares) if shares else None


def coding_figures(asked: Sequence[Asked]) -> dict[str, float | None]:
    """The pack's figures over ``asked`` (search@8's beside them when it was asked)."""
    answerable = [a for a in asked if a.relevant]
    wrapped = [a for a in answerable if a.kind == WRAPPED]
    paraphrase = [a for a in answerable if a.kind == "paraphrase"]
    figures = {
        "recall_any": _share([bool(set(a.pack) & a.relevant) for a in answerable]),
        "search@8": _share([bool(set(a.search) & a.relevant) for a in answerable])
        if any(a.search for a in asked)
        else None,
        "paraphrase": _share([bool(set(a.pack) & a.relevant) for a in paraphrase]),
        "precision": _precision(answerable, lambda a: a.pack),
        "wrapped precision": _precision(wrapped, lambda a: a.pack),
        "no-answer empty": _share([not a.pack for a in asked if not a.relevant]),
    }
    return figures


def locomo_figures(questioned: Sequence[Questioned]) -> dict[str, float | None]:
    def of(pick: Callable[[Questioned], bool | None]) -> float | None:
        return _share([bool(v) for q in questioned if (v := pick(q)) is not None])

    return {
        "bare any": of(lambda q: q.bare_any),
        "bare all": of(lambda q: q.bare_all),
        "wrapped any": of(lambda q: q.wrapped_any),
        "cross empty": of(lambda q: q.cross_empty),
    }


def shown(value: float | None, column: str = "") -> str:
    if value is None:
        return ""
    # A chosen value as given (0.35 is not 0.3); figures to a tenth of a point.
    return f"{value:g}" if column == "chosen" else f"{value:.1f}"


def table(
    title: str, rows: dict[str, dict[str, float | None]], columns: Sequence[str] | None = None
) -> None:
    columns = list(columns or next(iter(rows.values())))
    print(f"| {title} | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, figures in rows.items():
        print(f"| {name} | " + " | ".join(shown(figures.get(c), c) for c in columns) + " |")
    print()


def describe(asked: Sequence[Asked], questioned: Sequence[Questioned]) -> None:
    """Per project, per prompt type and overall; per conversation."""
    projects = sorted({a.project for a in asked})
    rows = {p: coding_figures([a for a in asked if a.project == p]) for p in projects}
    rows["all"] = coding_figures(asked)
    table("project", rows)
    kinds = sorted({a.kind for a in asked if a.relevant})
    by_kind = {}
    for kind in kinds:
        some = [a for a in asked if a.kind == kind]
        figures = coding_figures(some)
        gap = (figures["search@8"] or 0.0) - (figures["recall_any"] or 0.0)
        by_kind[kind] = {**figures, "gap": gap}
    table("type", by_kind, ["recall_any", "search@8", "gap", "precision"])
    if questioned:
        names = sorted({q.conversation for q in questioned})
        rows = {n: locomo_figures([q for q in questioned if q.conversation == n]) for n in names}
        rows["all"] = locomo_figures(questioned)
        table("conversation", rows)


def _short(text: str, size: int = 100) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= size else line[: size - 1] + "…")


def _marked(asked: Asked) -> str:
    """The pack's file ids, the relevant ones marked ``*``."""
    return "[" + " ".join(f + "*" * (f in asked.relevant) for f in asked.pack) + "]"


def changes(runs: dict[float, Sequence[Any]], shipped: float, value: float) -> list[str]:
    """One line for each prompt or question of ``runs[value]`` whose outcome differs from
    ``runs[shipped]``'s (the runs ask the same ones in the same order): a coding pack
    (relevant file ids marked ``*``), or a LoCoMo question's figures."""
    lines = []
    for before, after in zip(runs[shipped], runs[value], strict=True):
        if isinstance(before, Asked):
            if before.pack != after.pack:
                lines.append(
                    f"{before.project} {before.kind or '-'} {_short(before.prompt)}: "
                    f"{_marked(before)} -> {_marked(after)}"
                )
        else:
            figures = ("bare_any", "bare_all", "wrapped_any", "cross_empty")
            moved = [
                f"{name} {getattr(before, name)} -> {getattr(after, name)}"
                for name in figures
                if getattr(before, name) != getattr(after, name)
            ]
            if moved:
                lines.append(f"{before.conversation} {_short(before.question)}: {', '.join(moved)}")
    return lines


def held_out(
    runs: dict[float, Sequence[Any]],
    shipped: float,
    group: Callable[[Any], str],
    figures_of: Callable[[Sequence[Any]], dict[str, float | None]],
    score: Callable[[dict[str, float | None]], float],
    title: str,
) -> dict[str, dict[str, Any]]:
    """For each group left out, the value chosen on the others and the held-out figures at
    it and at ``shipped``; then the mean and the worst held out. Returns, per group left
    out, ``chosen``, ``at chosen`` and ``at shipped`` (the figures)."""
    groups = sorted({group(item) for item in runs[shipped]})
    rows: dict[str, dict[str, float | None]] = {}
    folds: dict[str, dict[str, Any]] = {}
    for left in groups:
        chosen = max(
            runs,
            key=lambda value: (
                score(figures_of([i for i in runs[value] if group(i) != left])),
                value == shipped,  # a tie keeps the shipped value
            ),
        )
        out = figures_of([i for i in runs[chosen] if group(i) == left])
        before = figures_of([i for i in runs[shipped] if group(i) == left])
        folds[left] = {"chosen": chosen, "at chosen": out, "at shipped": before}
        rows[left] = {"chosen": chosen, **out, "score": score(out), "shipped score": score(before)}
    chosen_figures = [fold["at chosen"] for fold in folds.values()]
    shipped_figures = [fold["at shipped"] for fold in folds.values()]
    for label, pick in (("mean", statistics.fmean), ("worst", min)):
        rows[label] = {
            column: pick([f[column] for f in chosen_figures if f[column] is not None] or [0.0])
            for column in chosen_figures[0]
        }
        rows[label]["score"] = pick([score(f) for f in chosen_figures])
        rows[label]["shipped score"] = pick([score(f) for f in shipped_figures])
    table(title, rows)
    return folds


def replayed(
    args: argparse.Namespace, name: str, values: Sequence[float]
) -> tuple[dict[float, list[Asked]], dict[float, list[Questioned]]]:
    """Every prompt and question asked once per value of ``name`` (put back after)."""
    from powercontext.search.relevance import numbers

    shipped = getattr(numbers, name)
    runs: dict[float, list[Asked]] = {}
    talks: dict[float, list[Questioned]] = {}
    try:
        for value in values:
            setattr(numbers, name, value)
            runs[value] = coding(args, with_search=False)
            talks[value] = locomo(args)
            print(f"# {name} = {value} done", flush=True)
    finally:
        setattr(numbers, name, shipped)
    return runs, talks


def fitted(
    args: argparse.Namespace,
    name: str,
    runs: dict[float, list[Asked]],
    talks: dict[float, list[Questioned]],
) -> dict[str, Any]:
    """Print the tables of one number's fit; return its entry of the record."""
    from powercontext.search.relevance import numbers

    shipped = getattr(numbers, name)
    settings = list(runs)
    print(f"# {name}: shipped {shipped}; chosen on the others, scored on the one left out\n")
    table(name, {str(v): coding_figures(runs[v]) for v in settings})
    projects = held_out(
        runs, shipped, lambda a: a.project, coding_figures, objective, "project left out"
    )
    entry: dict[str, Any] = {
        "grid": sorted(settings),
        "shipped": shipped,
        "projects": {
            left: {
                "chosen": fold["chosen"],
                "at chosen": _hundredths(fold["at chosen"]),
                "at shipped": _hundredths(fold["at shipped"]),
            }
            for left, fold in projects.items()
        },
    }
    if talks[shipped]:
        table(name, {str(v): locomo_figures(talks[v]) for v in settings})
        held_out(
            talks,
            shipped,
            lambda q: q.conversation,
            locomo_figures,
            locomo_objective,
            "conversation left out",
        )
        names = sorted({q.conversation for q in talks[shipped]})
        entry["conversations"] = {
            n: {
                str(v): _hundredths(locomo_figures([q for q in talks[v] if q.conversation == n]))
                for v in settings
            }
            for n in names
        }
    if args.changes:
        for value in settings:
            if value != shipped:
                found = changes(runs, shipped, value) + changes(talks, shipped, value)
                print(f"# {name} = {value} against {shipped}: {len(found)} outcomes change")
                for line in found:
                    print(f"- {line}")
                print()
    return entry


def _hundredths(figures: dict[str, float | None]) -> dict[str, float | None]:
    """Figures as the record keeps them (and the verdict reads them): to a hundredth."""
    return {name: None if value is None else round(value, 2) for name, value in figures.items()}


def record(args: argparse.Namespace) -> None:
    """Fit every number of the record (``--only``: those named) over its grid, the run at
    the shipped values asked once for all of them, and write each entry back with the
    digests of the data."""
    from powercontext.search.relevance import numbers

    path = Path(args.record)
    wanted = relevance_record.read(path)["numbers"]
    names = args.only.split(",") if args.only else list(wanted)
    known = relevance_record.decision_numbers()
    unknown = [n for n in names if n not in wanted or n not in known]
    if unknown or not names:
        raise SystemExit(f"--record: no grid to fit for {unknown or 'any number'}")
    data = relevance_record.digests(map(Path, args.file_paths), Path(args.files).parents[1])
    if args.locomo:
        data |= relevance_record.digests(Path(args.locomo).glob("*.json"), Path(args.locomo).parent)
        data["templates"] = relevance_record.digests(
            [Path(args.templates)], Path(args.templates).parent
        )[Path(args.templates).name]
    # The run at the shipped values is every number's run at its shipped value.
    base = coding(args, with_search=False), locomo(args)
    for name in names:
        grid = [overrides([f"{name}={v}"], "--record")[name] for v in wanted[name]["grid"]]
        shipped = getattr(numbers, name)
        runs, talks = replayed(args, name, [v for v in grid if v != shipped])
        runs[shipped], talks[shipped] = base
        entry = fitted(args, name, runs, talks)
        verdict = relevance_record.ships(entry)
        print(f"# {name}: the method ships {verdict} (shipped {shipped})\n", flush=True)
        with relevance_record.updating(path) as kept:
            # Why the method's value is not shipped, written by hand (``relevance_record``),
            # stays while the method still proposes it.
            reason = kept["numbers"].get(name, {}).get("kept")
            if reason and verdict != shipped:
                entry["kept"] = reason
            kept["data"] = data
            kept["numbers"][name] = entry


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    dev_data_arguments(parser)
    parser.add_argument("--choose", metavar="NAME=V1,V2,...", help="choose it leave-one-out")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--max-bytes", type=int, default=8000)
    parser.add_argument("--limit", type=int, default=None, help="prompts/questions per file")
    parser.add_argument("--no-locomo", action="store_true", help="the coding projects only")
    parser.add_argument("--questions", type=int, help="questions per conversation (a sample)")
    parser.add_argument("--ci", action="store_true", help="5 prompts/questions a file")
    parser.add_argument(
        "--changes", action="store_true", help="with --choose: each outcome a value changes"
    )
    parser.add_argument(
        "--record",
        nargs="?",
        const=str(relevance_record.RECORD),
        metavar="FILE",
        help="fit every number of the record over its grid and write it back",
    )
    parser.add_argument("--only", metavar="NAME,...", help="with --record: these numbers")
    args = parser.parse_args(argv)
    if args.record and (args.ci or args.limit or args.questions or args.no_locomo):
        parser.error("--record fits on all the data: no --ci, --limit, --questions, --no-locomo")
    if args.ci:
        args.limit = 5
    args.file_paths = sorted(glob.glob(args.files))
    if not args.file_paths:
        raise SystemExit(f"--files {args.files}: no file")
    if args.no_locomo:
        args.locomo = None
    args.home = args.home or tempfile.mkdtemp(prefix="pc-replay-")
    Path(args.home).mkdir(parents=True, exist_ok=True)
    setup_django(Path(args.home), None)
    from powercontext.search.relevance import numbers

    for name, value in overrides(args.set).items():
        setattr(numbers, name, value)
        print(f"# {name} = {value}", flush=True)
    started = time.perf_counter()
    if args.record:
        record(args)
        print(f"# home {args.home}; {time.perf_counter() - started:.0f} s")
        return
    if not args.choose:
        describe(coding(args, with_search=True), locomo(args))
        print(f"# home {args.home}; {time.perf_counter() - started:.0f} s")
        return
    name, _, values = args.choose.partition("=")
    settings = [overrides([f"{name}={v}"], "--choose")[name] for v in values.split(",") if v]
    shipped = getattr(numbers, name)
    if shipped not in settings:
        settings.append(shipped)
    fitted(args, name, *replayed(args, name, settings))
    print(f"# home {args.home}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
