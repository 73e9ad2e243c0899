"""Whether a change leaves every pack as it was, to the bit: a dump of every pack and of
every Memory candidate its search considered (cited id, verdict, focus, fused score,
similarity, the candidate it duplicates), over the coding-memory dev prompts and the
LoCoMo questions bare and wrapped, and the comparison of two dumps. For changes meant to
make the decision cheaper, not different.

    .venv/bin/python bench/decision_identity.py --files '<dev>/coding-memory-dev/*.json' \\
        --locomo <dev>/locomo-dev --home /tmp/identity --out /tmp/before.json
    # the other checkout, the same --home (its entry ids are the home's)
    /tmp/other/.venv/bin/python /tmp/other/bench/decision_identity.py ... --out /tmp/after.json
    .venv/bin/python bench/decision_identity.py --compare /tmp/before.json /tmp/after.json

The scopes are filled once, in a process of their own (the first run with a --home), and
every dump is taken after they all are: the full-text index ranks its candidates by bm25
over every scope in its table, so a scope's lexical candidates (the best 50 of its
matches) move as other scopes fill. A dump taken while the scopes were still filling is
not comparable with one taken after. ``--compare`` prints how many packs and how many
considered lists differ, and the first differences; it exits 1 when any does.
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.locomo import DEFAULT_TEMPLATES, load_conversation, load_templates, render  # noqa: E402
from bench.relevance_replay import fill  # noqa: E402
from bench.vector_bench import setup_django  # noqa: E402


def scopes(args: argparse.Namespace) -> list[tuple[str, list[tuple[str, str, str]], list[str]]]:
    """(scope, its entries as fill takes them, the prompts asked of it) for every project
    and conversation."""
    found = []
    for path in sorted(glob.glob(args.files)):
        project = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = [(e["id"], e["kind"], e["text"]) for e in project["entries"]]
        prompts = [prompt["prompt"] for prompt in project["prompts"][: args.limit]]
        found.append((f"identity-{project['project']}", entries, prompts))
    if args.locomo:
        template = load_templates(Path(args.templates))[0][1]
        for path in sorted(Path(args.locomo).glob("*.json")):
            conversation = load_conversation(path)
            entries = [(turn.dia_id, "fact", turn.text) for turn in conversation.turns]
            questions = [q.text for q in conversation.questions[: args.limit]]
            asked = [text for q in questions for text in (q, render(template, q))]
            found.append((f"identity-locomo-{path.stem}", entries, asked))
    return found


def dump(args: argparse.Namespace) -> dict[str, Any]:
    """{scope#n: [the pack's content, the Memory search's considered candidates]}."""
    from contextpack.application import prepare_context
    from memory.search_index import MEMORY_INDEX
    from powercontext.search import query

    considered: list[Any] = []
    search = query.search

    def recording(index: Any, asked: Any, **kwargs: Any) -> Any:
        found = search(index, asked, **kwargs)
        if index is MEMORY_INDEX:
            considered[:] = [
                [
                    c.ranked.hit.cited_id,
                    str(c.verdict),
                    c.focus,
                    c.ranked.score,
                    c.similarity,
                    c.duplicate_of,
                ]
                for c in found.considered
            ]
        return found

    query.search = recording
    found: dict[str, Any] = {}
    for scope, _, prompts in scopes(args):
        for at, prompt in enumerate(prompts):
            considered.clear()
            prepared = prepare_context(scope_id=scope, query=prompt, max_bytes=args.max_bytes)
            found[f"{scope}#{at}"] = [prepared.content, list(considered)]
    return found


def compare(
    before: dict[str, Any], after: dict[str, Any], *, shown: int = 3
) -> tuple[list[str], int]:
    """Lines saying how ``after`` differs from ``before`` (the last one the counts), and
    how many prompts differ in their pack or their considered list."""
    lines = []
    packs = lists = differing = 0
    for key in sorted(before.keys() | after.keys()):
        if key not in before or key not in after:
            lines.append(f"{key}: only in {'after' if key in after else 'before'}")
            packs += 1
            differing += 1
            continue
        (pack, considered), (pack_after, considered_after) = before[key], after[key]
        packs += pack != pack_after
        differing += pack != pack_after or considered != considered_after
        if considered != considered_after:
            lists += 1
            if lists <= shown:
                first = next(
                    (
                        pair
                        for pair in zip(considered, considered_after, strict=False)
                        if pair[0] != pair[1]
                    ),
                    (len(considered), len(considered_after)),
                )
                lines.append(f"{key}: first difference {first[0]} -> {first[1]}")
    lines.append(f"{len(before)} prompts: packs differ {packs}, considered lists differ {lists}")
    return lines, differing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--files", help="coding-memory project JSONs (a glob)")
    parser.add_argument("--locomo", help="a directory of LoCoMo JSONs")
    parser.add_argument("--templates", default=str(DEFAULT_TEMPLATES))
    parser.add_argument("--home", type=Path, help="where the scopes are kept")
    parser.add_argument("--out", type=Path, help="the dump")
    parser.add_argument("--limit", type=int, default=None, help="prompts/questions per file")
    parser.add_argument("--max-bytes", type=int, default=8000)
    parser.add_argument("--ci", action="store_true", help="3 prompts a file")
    parser.add_argument("--fill-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(path.read_text(encoding="utf-8")) for path in args.compare)
        lines, differing = compare(before, after)
        print("\n".join(lines))
        return 1 if differing else 0
    if not (args.files and args.home and (args.out or args.fill_only)):
        parser.error("--files, --home and --out (or --compare)")
    if args.ci:
        args.limit = 3
    args.home.mkdir(parents=True, exist_ok=True)
    if args.fill_only:
        setup_django(args.home, None)
        for scope, entries, _ in scopes(args):
            fill(args.home, scope, entries)
        return 0
    # Filled in a process of its own: this one dumps what every later run would see.
    subprocess.run([sys.executable, __file__, *(argv or sys.argv[1:]), "--fill-only"], check=True)
    setup_django(args.home, None)
    found = dump(args)
    args.out.write_text(json.dumps(found), encoding="utf-8")
    print(f"{len(found)} prompts dumped to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
