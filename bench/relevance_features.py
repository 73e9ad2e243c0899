"""Every Memory candidate a pack considered, with its evidence and whether it answers: the
table a learned decision is fitted on (bench/relevance_learn.py).

    .venv/bin/python bench/relevance_features.py --files '<dev>/coding-memory-dev/*.json' \\
        --locomo <dev>/locomo-dev --home /tmp/replay-home --out /tmp/features.jsonl

One JSON line per prompt: its set (project or conversation), kind, whether it is
answerable, the product's pack (file ids, as bench/relevance_replay.py gets it) and, for
the first ``--top`` candidates in the decision's order (every verdict), the evidence the
decision reads (``relevance.evidence.Evidence`` and its ``QueryFacts``), the candidate's
focus on the prompt (computed for each of them, not only the admitted ones) and its label.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.locomo import load_conversation, load_templates, render  # noqa: E402
from bench.relevance_fit import searched  # noqa: E402
from bench.relevance_replay import dev_data_arguments, fill, packed  # noqa: E402
from bench.vector_bench import setup_django  # noqa: E402

_recorded: dict[str, Any] = {}


def instrument(top: int) -> None:
    """Record the last Memory search's evidence (``rules.judge``'s input and the query's
    facts) and its considered candidates with their focus."""
    from memory.search_index import MEMORY_INDEX
    from powercontext.search import query as search_query
    from powercontext.search import token_states, vectors
    from powercontext.search.relevance import focus, rules

    judge = rules.judge

    def recording_judge(candidates: Any, facts: Any) -> Any:
        _recorded["evidence"] = {c.key: c for c in candidates}
        _recorded["facts_of_query"] = facts
        return judge(candidates, facts)

    rules.judge = recording_judge
    search = search_query.search

    def recording_search(index: Any, query: Any, **kwargs: Any) -> Any:
        if index is not MEMORY_INDEX:  # Experience's search, after Memory's: not recorded
            return search(index, query, **kwargs)
        _recorded.pop("evidence", None)
        found = search(index, query, **kwargs)
        if not query.pack:
            return found
        considered = found.considered[:top]
        keys = [item.ranked.hit.cited_id for item in considered]
        means: dict[str, list[float]] = {}
        if query.segment_texts and keys:
            documents = vectors.documents_of(index, scope_id=kwargs["scope_id"], cited_ids=keys)
            known = [key for key in keys if key in documents]
            texts = [*query.segment_texts, *(documents[k] for k in known)]
            rows = token_states.rows_for(texts)
            if rows is not None:
                segments = rows[: len(query.segment_texts)]
                for key, found_rows in zip(known, rows[len(query.segment_texts) :], strict=True):
                    means[key] = [
                        float(t.mean()) if len(t) else 0.0
                        for t in focus.matches(segments, found_rows)
                    ]
        _recorded["considered"] = considered
        _recorded["means"] = means
        _recorded["query"] = query
        return found

    search_query.search = recording_search


def rows(files: dict[str, str], relevant: set[str]) -> list[dict[str, Any]]:
    """The recorded candidates as feature rows."""
    evidence = _recorded.get("evidence") or {}
    facts = _recorded.get("facts_of_query")
    considered = _recorded.get("considered") or []
    means = _recorded.get("means") or {}
    query = _recorded.get("query")
    if query is None:
        return []
    sims = [item.similarity for item in considered if item.similarity is not None]
    best_sim = max(sims, default=0.0)
    best_focus = [max(v) for v in zip(*means.values(), strict=True)] if means else []
    picking = set(facts.picking) if facts else set()
    common = set(facts.common) if facts else set()
    found = []
    for place, item in enumerate(considered):
        key = item.ranked.hit.cited_id
        e = evidence.get(key)
        focus_values = means.get(key, [])
        focus_best = max(focus_values, default=0.0)
        segment = focus_values.index(focus_best) if focus_values else 0
        gap = (best_focus[segment] - focus_best) if focus_values else 1.0
        held = e.anchor_terms_held if e else frozenset()
        found.append(
            {
                "file": files.get(key, key),
                "label": files.get(key, key) in relevant,
                "place": place,
                "verdict": item.verdict.name,
                "admitted": item.admitted,
                "lexical": bool(e and e.lexical),
                "semantic_rank": item.semantic_rank,
                "similarity": item.similarity,
                "sim_e": e.similarity if e else None,
                "best_similarity": best_sim,
                "coverage": e.coverage if e else 0.0,
                "held": e.held if e else 0,
                "spread": e.spread if e else 0.0,
                "subjects": len(e.subjects) if e else 0,
                "readable": bool(e and e.readable),
                "entry_terms": len(e.terms) if e else 0,
                "anchor_picking": bool(held & picking),
                "anchor_common": bool(held & common),
                "focus": focus_best,
                "focus_gap": gap,
                "score": item.ranked.score,
            }
        )
    return found


def query_facts() -> dict[str, Any]:
    facts = _recorded.get("facts_of_query")
    query = _recorded.get("query")
    return {
        "anchors_known": len(facts.picking) if facts else 0,
        "anchors_common": len(facts.common) if facts else 0,
        "anchors_unknown": len(facts.unknown) if facts else 0,
        "anchors_only": bool(facts and facts.anchors_only),
        "single_segment": bool(facts and facts.single_segment),
        "readable_query": bool(facts.readable) if facts else True,
        "terms": len(query.terms) if query else 0,
        "segments": len(query.segment_texts) if query else 0,
        "log_chars": math.log1p(len(query.text)) if query else 0.0,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    dev_data_arguments(parser)
    parser.add_argument("--out", required=True)
    parser.add_argument("--top", type=int, default=24)
    parser.add_argument("--max-bytes", type=int, default=8000)
    parser.add_argument("--limit", type=int, default=None, help="prompts/questions per file")
    parser.add_argument("--ci", action="store_true", help="5 prompts a file")
    args = parser.parse_args(argv)
    if args.ci:
        args.limit = 5
    home = Path(args.home)
    home.mkdir(parents=True, exist_ok=True)
    setup_django(home, None)
    instrument(args.top)
    out = open(args.out, "w", encoding="utf-8")

    def write(record: dict[str, Any]) -> None:
        files = record.pop("_files")
        record["query_facts"] = _recorded.pop("facts", None) or query_facts()
        record["candidates"] = _recorded.pop("found", None) or rows(files, set(record["relevant"]))
        out.write(json.dumps(record) + "\n")

    for path in sorted(glob.glob(args.files)):
        project = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = [(e["id"], e["kind"], e["text"]) for e in project["entries"]]
        scope = f"replay-{project['project']}"
        ids = fill(home, scope, entries)
        files = {entry_id: file_id for file_id, entry_id in reversed(ids.items())}
        for prompt in project["prompts"][: args.limit]:
            _recorded.clear()
            pack = packed(scope, prompt["prompt"], args.max_bytes, files)
            facts = query_facts()
            found = rows(files, set(prompt["relevant"]))
            search = list(searched(scope, prompt["prompt"], files))
            _recorded.update(facts=facts, found=found)
            write(
                {
                    "data": "coding",
                    "set": project["project"],
                    "kind": prompt.get("type", ""),
                    "relevant": prompt["relevant"],
                    "pack": pack,
                    "search": search,
                    "_files": files,
                }
            )
        print(f"# {project['project']}", flush=True)
    template = load_templates(Path(args.templates))[0][1]
    conversations = {p.stem: load_conversation(p) for p in sorted(Path(args.locomo).glob("*.json"))}
    turn_ids = {
        name: fill(home, f"replay-locomo-{name}", [(t.dia_id, "fact", t.text) for t in c.turns])
        for name, c in conversations.items()
    }
    for name, conversation in conversations.items():
        files = {entry_id: dia for dia, entry_id in reversed(turn_ids[name].items())}
        for question in conversation.questions[: args.limit]:
            evidence = sorted(d for d in question.evidence if d in turn_ids[name])
            if not evidence:
                continue
            for variant, form in (("bare", "{question}"), ("wrapped", template)):
                _recorded.clear()
                query = render(form, question.text)
                pack = packed(f"replay-locomo-{name}", query, args.max_bytes, files)
                write(
                    {
                        "data": "locomo",
                        "set": name,
                        "kind": variant,
                        "relevant": evidence,
                        "pack": pack,
                        "_files": files,
                    }
                )
        print(f"# {name}", flush=True)
    for pair in args.pairs.split(","):
        asked, stored = pair.split(":")
        if asked not in conversations or stored not in conversations:
            continue
        files = {entry_id: dia for dia, entry_id in turn_ids[stored].items()}
        for question in conversations[asked].questions[: args.limit]:
            _recorded.clear()
            pack = packed(f"replay-locomo-{stored}", question.text, args.max_bytes, files)
            write(
                {
                    "data": "cross",
                    "set": stored,
                    "kind": "cross",
                    "relevant": [],
                    "pack": pack,
                    "_files": files,
                }
            )
    out.close()


if __name__ == "__main__":
    main()
