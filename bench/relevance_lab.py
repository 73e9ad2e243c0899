"""Relevance lab: every candidate a Context Pack considers, with its evidence, dumped for study.

Loads the coding-memory and LoCoMo dev sets into a fresh SQLite home in this process
(the real services, the real model), then for every prompt gathers the candidates the
pack's search considers (the lexical engine's and the vector index's nearest) and writes,
per candidate, what is known about it: lexical score and matched terms with their weights,
each segment's coverage, cosine to each semantic segment and to the whole prompt, the
semantic pool's statistics, and whether the entry is relevant (the data's gold).

    .venv/bin/python bench/relevance_lab.py --coding '<dir>/*.json' --locomo <dir> --out lab.pkl

For study only: nothing in the product reads its output.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pickle
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def setup(home: str) -> None:
    os.environ["POWERCONTEXT_HOME"] = home
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "powercontext.server.settings")
    os.environ.pop("POWERCONTEXT_DATABASE_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load_coding(pattern: str):
    for path in sorted(glob.glob(pattern)):
        data = json.loads(Path(path).read_text())
        yield data


def load_locomo(directory: str):
    for path in sorted(Path(directory).glob("*.json")):
        raw = json.loads(path.read_text())
        conv = raw.get("conversation", raw)
        numbers = sorted(
            int(m.group(1))
            for m in (re.fullmatch(r"session_(\d+)", k) for k in conv)
            if m and conv[m.group(0)]
        )
        turns = []
        for n in numbers:
            date = conv[f"session_{n}_date_time"]
            for turn in conv[f"session_{n}"]:
                turns.append((turn["dia_id"], f"[{date}] {turn['speaker']}: {turn['text']}"))
        questions = [
            (q["question"], q["category"], tuple(q.get("evidence", ())))
            for q in raw["qa"]
            if q.get("category") in (1, 2, 3, 4)
        ]
        yield path.stem, turns, questions


def remember_all(scope_id: str, items: list[tuple[str, str, str]]) -> dict[str, str]:
    """items: (key, kind, text) -> {key: entry_id}."""
    from memory.services import memory_remember

    by_text: dict[str, str] = {}
    mapping = {}
    for key, kind, text in items:
        result = memory_remember(scope_id=scope_id, kind=kind, text=text)
        if result.entry is not None:
            by_text[text] = result.entry.citation.entry_id
        mapping[key] = by_text[text]
    return mapping


class Lab:
    def __init__(self):
        import numpy as np

        from memory.models import MemoryActiveEntry, MemoryTermStat
        from powercontext import embeddings
        from powercontext.term_counts import TermCounts

        self.np = np
        self.model = embeddings.embedder()
        self.counts = TermCounts(MemoryTermStat)
        self.active = MemoryActiveEntry
        self.scope_cache: dict[str, tuple] = {}

    def scope(self, scope_id: str):
        if scope_id not in self.scope_cache:
            rows = list(
                self.active.objects.filter(scope_id=scope_id).values_list(
                    "entry_id", "searchable_text", "entry_version__text"
                )
            )
            ids = [r[0] for r in rows]
            vectors = self.model.embed_documents([r[2] for r in rows])
            self.scope_cache[scope_id] = (
                ids,
                {r[0]: r[1] for r in rows},
                {r[0]: r[2] for r in rows},
                vectors,
            )
        return self.scope_cache[scope_id]

    def candidates(self, scope_id: str, prompt: str, history: list[frozenset[str]]):
        from memory.search_index import MEMORY_INDEX
        from powercontext import analyzer
        from powercontext.search import hybrid, search_engine, vectors
        from powercontext.search.fusion import fuse
        from powercontext.search.policy import CANDIDATE_POOL, recurring_terms
        from powercontext.search.ranking import query_segments, rank, semantic_segments
        from powercontext.snapshot import read_snapshot

        np = self.np
        ids, searchable, texts, matrix = self.scope(scope_id)
        terms = analyzer.query_terms(prompt)
        recurring = recurring_terms(terms, history)
        segments = query_segments(prompt)
        sem_texts = semantic_segments(prompt, recurring)
        sem_vectors = hybrid.query_vectors(sem_texts)
        whole = self.model.embed_query(prompt)
        with read_snapshot():
            plan = self.counts.search_plan(
                scope_id=scope_id, terms=terms, recurring=recurring, segments=segments
            )
            frequencies, documents = self.counts.frequencies(scope_id=scope_id, terms=terms)
            engine = search_engine()
            lexical = []
            used_group = None
            for name, group in (("match", plan.match), ("fallback", plan.fallback)):
                if group and not lexical:
                    lexical = engine.match(
                        MEMORY_INDEX, scope_id=scope_id, terms=list(group), limit=CANDIDATE_POOL
                    )
                    used_group = name
            semantic = vectors.vector_match(
                MEMORY_INDEX, scope_id=scope_id, query_vectors=sem_vectors, limit=CANDIDATE_POOL
            )
        scored = rank(((h.cited_id, h.searchable_text) for h in lexical), plan.weights, segments)
        similarity = {h.cited_id: h.score for h in semantic}
        fused = fuse(scored, similarity.items())
        current = hybrid.ranked(lexical, scored, semantic, answer_floor=hybrid.ANSWER_FLOOR)
        current_ids = [item.hit.cited_id for item in current][:16]
        index_of = {entry_id: i for i, entry_id in enumerate(ids)}
        seg_matrix = np.array(sem_vectors) if sem_vectors else np.zeros((0, matrix.shape[1]))
        all_cos = matrix @ seg_matrix.T if len(seg_matrix) else np.zeros((len(ids), 0))
        all_whole = matrix @ whole
        best_all = all_cos.max(axis=1) if all_cos.shape[1] else np.zeros(len(ids))
        lex_scores = dict(scored)
        lex_rank = {key: i for i, (key, _) in enumerate(scored)}
        sem_rank = {h.cited_id: i for i, h in enumerate(semantic)}
        fused_rank = {h.key: i for i, h in enumerate(fused)}
        fused_score = {h.key: h.score for h in fused}
        segment_weights = [
            {t: plan.weights[t] for t in set(seg) if t in plan.weights} for seg in segments
        ]
        cands = []
        for key in fused_rank:
            doc_terms = set(searchable[key].split())
            matched = {t: w for t, w in plan.weights.items() if t in doc_terms}
            coverage = [
                (sum(w for t, w in seg.items() if t in doc_terms) / sum(seg.values()))
                if seg
                else 0.0
                for seg in segment_weights
            ]
            i = index_of[key]
            cands.append(
                {
                    "id": key,
                    "lex": lex_scores.get(key),
                    "lex_rank": lex_rank.get(key),
                    "sem": similarity.get(key),
                    "sem_rank": sem_rank.get(key),
                    "fused": fused_score[key],
                    "fused_rank": fused_rank[key],
                    "cos_segments": all_cos[i].tolist(),
                    "cos_best": float(best_all[i]),
                    "cos_whole": float(all_whole[i]),
                    "matched": matched,
                    "coverage": coverage,
                    "doc_len": len(searchable[key].split()),
                    "doc_terms": len(doc_terms),
                    "text": texts[key],
                    "in_current": key in current_ids,
                    "current_rank": current_ids.index(key) if key in current_ids else None,
                }
            )
        best_sorted = np.sort(best_all)[::-1]
        return {
            "terms": terms,
            "recurring": sorted(recurring),
            "frequencies": {t: frequencies.get(t, 0) for t in terms},
            "documents": documents,
            "weights": dict(plan.weights),
            "match": list(plan.match),
            "fallback": list(plan.fallback),
            "used_group": used_group,
            "segments": segments,
            "sem_texts": sem_texts,
            "scope_size": len(ids),
            "background": {
                "best_mean": float(best_all.mean()) if len(ids) else 0.0,
                "best_std": float(best_all.std()) if len(ids) else 0.0,
                "best_p50": float(np.median(best_all)) if len(ids) else 0.0,
                "best_p90": float(np.percentile(best_all, 90)) if len(ids) else 0.0,
                "top": best_sorted[:60].tolist(),
                "whole_mean": float(all_whole.mean()) if len(ids) else 0.0,
                "whole_std": float(all_whole.std()) if len(ids) else 0.0,
                "seg_mean": all_cos.mean(axis=0).tolist() if len(ids) else [],
                "seg_std": all_cos.std(axis=0).tolist() if len(ids) else [],
            },
            "cands": cands,
            "current": current_ids,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coding", required=True)
    parser.add_argument("--locomo", required=True)
    parser.add_argument("--templates", default=str(ROOT / "bench/prompts/locomo_templates.json"))
    parser.add_argument("--home", default=None, help="reuse a seeded home")
    parser.add_argument("--pairs", default="26:30,30:41,41:42,42:43,43:26")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    home = args.home or tempfile.mkdtemp(prefix="relevance-lab-")
    seeded = Path(home, "lab-seed.json")
    setup(home)
    if seeded.exists():
        mapping = json.loads(seeded.read_text())
    else:
        mapping = {"coding": {}, "locomo": {}}
        for data in load_coding(args.coding):
            scope = f"coding-{data['project']}"
            items = [(e["id"], e["kind"], e["text"]) for e in data["entries"]]
            mapping["coding"][data["project"]] = remember_all(scope, items)
            print("seeded", scope, file=sys.stderr)
        for name, turns, _ in load_locomo(args.locomo):
            scope = f"locomo-{name}"
            items = [(dia, "note", text) for dia, text in turns]
            mapping["locomo"][name] = remember_all(scope, items)
            print("seeded", scope, file=sys.stderr)
        seeded.write_text(json.dumps(mapping))
    from powercontext import analyzer

    lab = Lab()
    records = []

    def run(dataset, group, scope, prompt, relevant, kind, variant, pass_, history, extra=None):
        found = lab.candidates(scope, prompt, history)
        for cand in found["cands"]:
            cand["rel"] = cand["id"] in relevant
        records.append(
            {
                "dataset": dataset,
                "group": group,
                "scope": scope,
                "prompt": prompt,
                "relevant": sorted(relevant),
                "type": kind,
                "variant": variant,
                "pass": pass_,
                **(extra or {}),
                **found,
            }
        )

    for data in load_coding(args.coding):
        project = data["project"]
        ids = mapping["coding"][project]
        scope = f"coding-{project}"
        for pass_ in ("cold", "captured"):
            history: list[frozenset[str]] = []
            for prompt in data["prompts"]:
                relevant = {ids[r] for r in prompt["relevant"]}
                run(
                    "coding",
                    project,
                    scope,
                    prompt["prompt"],
                    relevant,
                    prompt["type"],
                    "bare",
                    pass_,
                    history[:20] if pass_ == "captured" else [],
                    {"pid": prompt["id"]},
                )
                history.insert(0, frozenset(analyzer.tokens(prompt["prompt"][:8192])))
        print("done", project, file=sys.stderr)
    templates = json.loads(Path(args.templates).read_text())["templates"]
    template = templates[0]["template"]
    conversations = {
        name: (turns, questions) for name, turns, questions in load_locomo(args.locomo)
    }
    for name, (turns, questions) in conversations.items():
        ids = mapping["locomo"][name]
        scope = f"locomo-{name}"
        for pass_ in ("cold", "captured"):
            history = []
            for variant in ("bare", "wrapped"):
                for question, category, evidence in questions:
                    prompt = (
                        question if variant == "bare" else template.replace("{question}", question)
                    )
                    relevant = {ids[e] for e in evidence if e in ids}
                    run(
                        "locomo",
                        name,
                        scope,
                        prompt,
                        relevant,
                        f"cat{category}",
                        variant,
                        pass_,
                        history[:20] if pass_ == "captured" else [],
                    )
                    history.insert(0, frozenset(analyzer.tokens(prompt[:8192])))
        print("done", name, file=sys.stderr)
    for pair in args.pairs.split(","):
        asked, scope_of = pair.split(":")
        _, questions = conversations[asked]
        for question, category, _ in questions:
            run(
                "crossconv",
                pair,
                f"locomo-{scope_of}",
                question,
                set(),
                f"cat{category}",
                "bare",
                "cold",
                [],
            )
        print("done crossconv", pair, file=sys.stderr)
    with open(args.out, "wb") as out:
        pickle.dump(records, out)
    print("records", len(records), "home", home, file=sys.stderr)


if __name__ == "__main__":
    main()
