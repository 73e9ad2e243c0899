"""What reading the prompt together with each candidate would cost a prepare.

A cross-encoder (a reranker) reads the prompt and one entry as one input, once per
candidate; none ships its weights in a package (docs/relevance-history.md, "Where the
targets conflict"). The shipped model has the size of ms-marco-MiniLM-L-6-v2 (six
layers, 384 wide), so its cost on the same inputs is what such a reranker would cost:
``--pairs`` prompt + entry texts in one batch, against embedding the prompt alone, in the
same run. Medians and 95th percentiles over the prompts.

    .venv/bin/python bench/pair_cost.py --files '<coding-memory-dev>/*.json'
    .venv/bin/python bench/pair_cost.py --ci          # a few prompts of its own
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.served import percentile  # noqa: E402

# The model's tokens are about four characters of English: 300 characters of prompt and
# an entry of some 200 fill about 125 of its 256.
PROMPT_CHARACTERS = 300
PROMPTS_PER_PROJECT = 20

CI_ENTRIES = [
    "Run the tests with `make test` before pushing; CI runs the same target.",
    "Invoices are immutable once finalized; issue a credit note instead.",
    "The worker retries Stripe calls three times with exponential backoff.",
    "Staging deploys from main every night at 02:00 UTC.",
]
CI_PROMPTS = [
    "How do I run the test suite locally before I push?",
    "Can I edit an invoice after it was finalized?",
    "What happens when a Stripe call fails in the worker?",
]


def dev_data(pattern: str, per_project: int) -> list[tuple[str, list[str]]]:
    """(prompt, the project's entries) for the first ``per_project`` prompts of each
    coding-memory project file matching ``pattern``."""
    found = []
    for path in sorted(glob.glob(pattern)):
        project = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = [entry["text"] for entry in project["entries"]]
        found += [(prompt["prompt"], entries) for prompt in project["prompts"][:per_project]]
    return found


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def measure(
    embed: Callable[[list[str]], object],
    prompts: Sequence[tuple[str, list[str]]],
    counts: Sequence[int],
) -> dict[int, tuple[list[float], list[float]]]:
    """{pairs: (each prompt's time for that many pairs, its time embedded alone)}, ms.
    Each prompt is paired with entries spread over its project's (the same ones at each
    count), and embedded alone right before, so both see the same machine."""
    embed(["warm up"])
    times: dict[int, tuple[list[float], list[float]]] = {}
    for count in counts:
        pairs_ms, alone_ms = [], []
        for at, (prompt, entries) in enumerate(prompts):
            text = prompt[:PROMPT_CHARACTERS]
            pairs = [f"{text} [SEP] {entries[(at * 7 + k) % len(entries)]}" for k in range(count)]
            alone_ms.append(timed(lambda text=text: embed([text])))
            pairs_ms.append(timed(lambda pairs=pairs: embed(pairs)))
        times[count] = (pairs_ms, alone_ms)
    return times


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", help="coding-memory project JSONs (a glob)")
    parser.add_argument("--pairs", default="4,8,16", help="candidates read with the prompt")
    parser.add_argument("--prompts", type=int, default=PROMPTS_PER_PROJECT, help="per project")
    parser.add_argument("--ci", action="store_true", help="a few prompts of its own")
    args = parser.parse_args(argv)
    if args.ci:
        prompts = [(prompt, CI_ENTRIES) for prompt in CI_PROMPTS]
    elif args.files:
        prompts = dev_data(args.files, args.prompts)
    else:
        parser.error("--files or --ci")
    if not prompts:
        raise SystemExit(f"--files {args.files}: no prompt")
    counts = [int(count) for count in args.pairs.split(",")]
    from powercontext import embedding

    model = embedding.embedder()
    times = measure(model.embed_documents, prompts, counts)
    print(f"# {len(prompts)} prompts, the first {PROMPT_CHARACTERS} characters of each")
    print("| pairs | p50 ms | p95 ms | the prompt alone, p50 ms | ratio |")
    print("|---|---|---|---|---|")
    for count, (pairs_ms, alone_ms) in times.items():
        pairs_p50, alone_p50 = statistics.median(pairs_ms), statistics.median(alone_ms)
        print(
            f"| {count} | {pairs_p50:.1f} | {percentile(pairs_ms, 0.95):.1f} | "
            f"{alone_p50:.1f} | {pairs_p50 / alone_p50:.1f} |"
        )


if __name__ == "__main__":
    main()
