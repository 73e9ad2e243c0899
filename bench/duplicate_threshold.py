"""The cosine at which two entries say the same thing: paraphrase pairs against pairs on
the same subject, and the pairs of real entries a threshold would merge.

    .venv/bin/python bench/duplicate_threshold.py \\
        --coding-memory '<data>/coding-memory-dev/*.json' --locomo '<data>/locomo-dev/*.json'

Prints the cosine of each hand-written pair (same meaning in other words; same subject,
different instruction), then for every pair of distinct entries of a coding-memory
project (and of LoCoMo turns of 40 bytes or more in one conversation) the share above
each candidate threshold and the nearest pairs, so a threshold that would merge distinct
entries shows. The model is the shipped one (``powercontext.embedding``).
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (a, b): the same thing in other words.
SAME = [
    ("Run the tests with make test.", "Use `make test` to run the test suite."),
    (
        "Never call python manage.py test; use pytest.",
        "Don't run the Django test runner (manage.py test), run pytest instead.",
    ),
    (
        "The staging database is reset every night at 2am.",
        "Every night at 02:00 the staging DB gets wiped and reset.",
    ),
    (
        "Deploys are frozen on Fridays.",
        "No deployments on Friday: the release freeze starts Friday morning.",
    ),
    ("Use pnpm, never npm or yarn.", "The package manager is pnpm; npm and yarn are not allowed."),
    (
        "Format Python code with ruff format before committing.",
        "Before each commit, run ruff format on the Python sources.",
    ),
    (
        "The webhook secret lives in the STRIPE_WEBHOOK_SECRET environment variable.",
        "STRIPE_WEBHOOK_SECRET (an env var) holds the webhook signing secret.",
    ),
    (
        "Alice prefers small pull requests with one change each.",
        "Keep PRs small, one change per PR: Alice asks for that in review.",
    ),
    (
        "Migrations must be backwards compatible because we deploy without downtime.",
        "Since deploys have no downtime, every migration has to stay compatible with the "
        "previous release.",
    ),
    (
        "Celery tasks must be idempotent; they are retried on failure.",
        "Write every Celery task so it can run twice safely: failed tasks are retried.",
    ),
]
# (a, b): the same subject, a different thing to know.
RELATED = [
    ("Run the tests with make test.", "Lint with make lint."),
    ("Run the tests with make test.", "Tests need a running PostgreSQL on port 5433."),
    ("Use pnpm, never npm or yarn.", "Node 20 is required; use nvm to install it."),
    ("Deploys are frozen on Fridays.", "Deploy with make release from the main branch."),
    (
        "The staging database is reset every night at 2am.",
        "The production database is backed up every hour.",
    ),
    (
        "Format Python code with ruff format before committing.",
        "Type-check with mypy before committing.",
    ),
    (
        "Celery tasks must be idempotent; they are retried on failure.",
        "Celery runs with four workers in production.",
    ),
    (
        "Alice prefers small pull requests with one change each.",
        "Bob reviews every change to the billing module.",
    ),
    (
        "Migrations must be backwards compatible because we deploy without downtime.",
        "Squash migrations only at a major release.",
    ),
    (
        "The webhook secret lives in the STRIPE_WEBHOOK_SECRET environment variable.",
        "The Stripe API key lives in the STRIPE_API_KEY environment variable.",
    ),
]
THRESHOLDS = (0.80, 0.85, 0.87, 0.88, 0.90, 0.92, 0.95)


def _embed(texts: list[str]) -> np.ndarray:
    from powercontext.embedding import embedder

    vectors = np.asarray(embedder().embed_documents(texts), dtype=np.float64)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def _pairs(name: str, texts: list[str], shown: int) -> None:
    vectors = _embed(texts)
    cosines = vectors @ vectors.T
    upper = np.triu_indices(len(texts), k=1)
    values = cosines[upper]
    print(f"\n{name}: {len(texts)} texts, {len(values)} pairs")
    print(
        "  pairs at or above: "
        + ", ".join(f"{t:.2f}: {(values >= t).sum()}" for t in THRESHOLDS)
        + f"; max {values.max():.3f}, p99.9 {np.quantile(values, 0.999):.3f}"
    )
    # Per text: how many texts would lose their nearest neighbour.
    np.fill_diagonal(cosines, -1)
    nearest = cosines.max(axis=1)
    print(
        "  texts with a neighbour at or above: "
        + ", ".join(f"{t:.2f}: {(nearest >= t).sum()}" for t in THRESHOLDS)
    )
    for at in np.argsort(-values)[:shown]:
        i, j = upper[0][at], upper[1][at]
        print(f"  {values[at]:.3f}  {texts[i][:90]!r}\n         {texts[j][:90]!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--coding-memory", required=True)
    parser.add_argument("--locomo", required=True)
    parser.add_argument("--shown", type=int, default=5)
    args = parser.parse_args()
    for name, pairs in (("same meaning", SAME), ("same subject", RELATED)):
        vectors = _embed([text for pair in pairs for text in pair])
        cosines = [float(vectors[2 * n] @ vectors[2 * n + 1]) for n in range(len(pairs))]
        print(
            f"{name}: min {min(cosines):.3f}, median {np.median(cosines):.3f}, "
            f"max {max(cosines):.3f}"
        )
        for (a, b), cosine in sorted(zip(pairs, cosines, strict=True), key=lambda p: p[1]):
            print(f"  {cosine:.3f}  {a[:50]!r} / {b[:50]!r}")
    for path in sorted(glob.glob(args.coding_memory)):
        entries = json.loads(Path(path).read_text())["entries"]
        _pairs(Path(path).stem, [entry["text"] for entry in entries], args.shown)
    for path in sorted(glob.glob(args.locomo)):
        conversation = json.loads(Path(path).read_text())
        turns = [
            turn["text"]
            for key, session in conversation.items()
            if key.startswith("session_") and isinstance(session, list)
            for turn in session
            if len(turn.get("text", "").encode()) >= 40
        ]
        _pairs(f"locomo {Path(path).stem}", list(dict.fromkeys(turns)), args.shown)


if __name__ == "__main__":
    main()
