"""How exact SQLite's vector search is on real embeddings, against an exact float scan.

    .venv/bin/python bench/vector_exactness.py --locomo <locomo-dev> --entries 30000 \
        --cache /tmp/vectors.npz

``powercontext.search.vector_sqlite`` finds candidates by 2-bit codes and rescores them by
exact cosine: a row of the true ``k`` nearest is missed only when its code put it outside
the candidates. Random vectors would hide that error (their codes are as good as
independent), so the rows are real embeddings by the running model: every LoCoMo turn of
``--locomo`` (dev data), then bench/corpus.py memories up to ``--entries``; the queries are
150 LoCoMo questions and 50 bench prompts. For each number of candidates, and for a
scope of each ``--sizes``, the mean overlap of the engine's top 8 and top 50 with the exact
top 8 and top 50 (numpy, float32 dot products), its worst query, and the share of queries
not exact. ``--sign-bits`` adds the same figures for candidates by sign bits alone
(``vec_quantize_binary``, computed with numpy), the code this one replaced.
``--segments`` asks as prepare does: each query is the question wrapped in the first
bench/prompts/locomo_templates.json template (the bench prompts as they are), split into
its segments (``ranking.semantic_segments``), all of them searched in one pass; the exact
answer ranks every row by its cosine to the nearest segment. Embedding 30,000 texts takes
minutes: ``--cache`` keeps them.
"""

from __future__ import annotations

import argparse
import glob
import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.vector_bench import PROMPTS, setup_django  # noqa: E402


def texts_and_queries(locomo: str, entries: int) -> tuple[list[str], list[str]]:
    from bench.corpus import memories

    texts, questions = [], []
    for path in sorted(glob.glob(str(Path(locomo) / "*.json"))):
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        for key, value in data.items():
            if key.startswith("session_") and isinstance(value, list):
                texts += [turn["text"] for turn in value if turn.get("text")]
        questions += [qa["question"] for qa in data["qa"]]
    stream = memories(28)
    while len(texts) < entries:
        texts.append(next(stream)[1])
    prompts = json.loads(PROMPTS.read_text(encoding="utf-8"))["prompts"][:50]
    return texts[:entries], random.Random(3).sample(questions, 150) + prompts


def embedded(options: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    cache = Path(options.cache) if options.cache else None
    if cache and cache.exists():
        stored = np.load(cache)
        return stored["docs"][: options.entries], stored["queries"]
    from powercontext import embedding

    texts, queries = texts_and_queries(options.locomo, options.entries)
    model = embedding.embedder()
    documents = np.concatenate(
        [model.embed_documents(texts[start : start + 512]) for start in range(0, len(texts), 512)]
    ).astype(np.float32)
    query_vectors = np.stack([model.embed_query(query) for query in queries]).astype(np.float32)
    if cache:
        np.savez(cache, docs=documents, queries=query_vectors)
    return documents, query_vectors


def segment_queries(queries: list[str]) -> list[list[str]]:
    from powercontext.search.ranking import segmented, semantic_segments

    templates = ROOT / "bench" / "prompts" / "locomo_templates.json"
    template = json.loads(templates.read_text(encoding="utf-8"))["templates"][0]["template"]
    return [
        semantic_segments(
            segmented(template.replace("{question}", query) if number < 150 else query)
        )
        for number, query in enumerate(queries)
    ]


def embedded_segments(options: argparse.Namespace) -> list[np.ndarray]:
    cache = Path(options.cache + ".segments.npz") if options.cache else None
    if cache and cache.exists():
        stored = np.load(cache)
        return np.split(stored["vectors"], stored["offsets"])
    from powercontext import embedding

    _, queries = texts_and_queries(options.locomo, 0)
    model = embedding.embedder()
    groups = [model.embed_documents(segments) for segments in segment_queries(queries)]
    if cache:
        offsets = np.cumsum([len(group) for group in groups])[:-1]
        np.savez(cache, vectors=np.concatenate(groups), offsets=offsets)
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=30000)
    parser.add_argument("--sizes", default="10000,30000", help="scope sizes measured")
    parser.add_argument("--candidates", default="256,512,1056,2048")
    parser.add_argument("--locomo", required=True, help="LoCoMo JSON directory (the dev split)")
    parser.add_argument("--cache", help="an .npz of the embeddings (written if missing)")
    parser.add_argument("--sign-bits", action="store_true", help="also sign-bit candidates")
    parser.add_argument(
        "--segments", action="store_true", help="queries as prepare's segments, one pass"
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vector-exactness-") as home:
        setup_django(Path(home), None)
        from dataclasses import dataclass

        from django.db import connection

        from powercontext.search import vector_sqlite
        from powercontext.search.vectors import VectorRow

        documents, queries = embedded(options)
        groups = embedded_segments(options) if options.segments else [[query] for query in queries]
        print(
            f"# {len(documents)} real embeddings, {len(groups)} queries, "
            f"{sum(len(group) for group in groups)} vectors"
        )

        @dataclass(frozen=True)
        class Index:
            name: str

        index, engine = Index("exactness"), vector_sqlite.SqliteVectors()
        for size in [int(size) for size in options.sizes.split(",")]:
            if size > len(documents):
                continue
            rows = np.random.default_rng(size).permutation(len(documents))[:size]
            forward, reverse = engine.ddl(index, documents.shape[1])
            with connection.cursor() as cursor:
                for statement in [*reverse, *forward]:
                    cursor.execute(statement)
            engine.upsert(
                index,
                [(VectorRow(int(key) + 1, "s", str(key), 1, ""), documents[key]) for key in rows],
            )
            for candidates in [int(value) for value in options.candidates.split(",")]:
                # The engine asks for max(factor x k, minimum) candidates: fix it here.
                vector_sqlite.COARSE_FACTOR, vector_sqlite.COARSE_MIN = 0, candidates
                overlap: dict[int, list[float]] = {8: [], 50: []}
                for group in groups:
                    nearest = (documents[rows] @ np.asarray(group).T).max(axis=1)
                    exact = rows[np.argsort(-nearest, kind="stable")] + 1
                    found = engine.nearest(index, scope_id="s", vectors=list(group), k=50)
                    keys = [key for key, *_ in found]
                    for k, values in overlap.items():
                        values.append(len(set(keys[:k]) & set(exact[:k].tolist())) / k)
                report(f"{size:>7,} rows, {candidates:>5,} candidates", overlap)
                if options.sign_bits:
                    report("  by sign bits", sign_bit_overlap(documents[rows], queries, candidates))


def report(label: str, overlap: dict[int, list[float]]) -> None:
    print(
        f"{label}: "
        + "; ".join(
            f"top {k} overlap {np.mean(values):.4f} (worst {min(values):.2f}, "
            f"{np.mean(np.array(values) < 1):.0%} of queries not exact)"
            for k, values in overlap.items()
        ),
        flush=True,
    )


def sign_bit_overlap(
    documents: np.ndarray, queries: np.ndarray, candidates: int
) -> dict[int, list[float]]:
    bits = np.packbits(documents > 0, axis=1)
    overlap: dict[int, list[float]] = {8: [], 50: []}
    for query in queries:
        cosine = documents @ query
        exact = np.argsort(-cosine, kind="stable")
        hamming = np.bitwise_count(bits ^ np.packbits(query > 0)).sum(axis=1)
        nearest = np.lexsort((np.arange(len(documents)), hamming))[:candidates]
        found = nearest[np.argsort(-cosine[nearest], kind="stable")]
        for k, values in overlap.items():
            values.append(len(set(found[:k].tolist()) & set(exact[:k].tolist())) / k)
    return overlap


if __name__ == "__main__":
    main()
