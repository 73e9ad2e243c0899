"""Prepare latency on real scopes: the coding-memory projects with the model's own vectors.

    .venv/bin/python bench/pack_latency.py --files '<dev>/coding-memory-dev/*.json'

bench/vector_bench.py times prepare at 1,000 entries with random vectors: there, few
candidates are near a prompt, and the relevance decision's later steps (near-duplicates,
focus) have little to judge. Here each project's entries are remembered through the Memory
services (real embeddings, as the server writes them) into a fresh data directory, then
every prompt of the project goes through ``prepare_context`` in process, twice (the first
round warms the caches): p50 and p95 of the second round. With ``--cold`` passes it also
times each prepare with nothing kept: the query vectors forgotten (as vector_bench's
"prepare"), and, where the tree has it, the token states too (``token_states.forget``: a
restarted server). Run it in two trees one after the other to compare them in one session.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.vector_bench import setup_django  # noqa: E402


def _percentiles(seconds: Sequence[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def timed(prompts: Sequence[tuple[str, str]], before: Callable[[], None]) -> list[float]:
    from contextpack.application import prepare_context

    seconds = []
    for scope, prompt in prompts:
        before()
        began = time.perf_counter()
        prepare_context(scope_id=scope, query=prompt, max_bytes=8000)
        seconds.append(time.perf_counter() - began)
    return seconds


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", required=True, help="coding-memory project JSONs (a glob)")
    parser.add_argument("--limit", type=int, default=None, help="prompts per project")
    parser.add_argument("--ci", action="store_true", help="10 prompts per project")
    args = parser.parse_args(argv)
    if args.ci:
        args.limit = 10
    paths = sorted(glob.glob(args.files))
    if not paths:
        raise SystemExit(f"--files {args.files}: no file")
    home = Path(tempfile.mkdtemp(prefix="pc-pack-latency-"))
    setup_django(home, None)
    from memory.services import memory_remember
    from powercontext.search import hybrid

    prompts: list[tuple[str, str]] = []
    for path in paths:
        project = json.loads(Path(path).read_text(encoding="utf-8"))
        scope = f"latency-{project['project']}"
        for entry in project["entries"]:
            memory_remember(scope_id=scope, kind=entry["kind"], text=entry["text"])
        prompts += [(scope, p["prompt"]) for p in project["prompts"][: args.limit]]
    timed(prompts, lambda: None)  # warms the caches
    print(f"# {len(prompts)} prompts over {len(paths)} projects; home {home}")
    print(f"prepare, warm: {_percentiles(timed(prompts, lambda: None))}")
    print(f"prepare, prompt cold: {_percentiles(timed(prompts, hybrid.forget_query_vectors))}")
    try:
        from powercontext.search import token_states as kept
    except ImportError:
        try:  # an older tree kept them in the focus module
            from powercontext.search import focus as kept  # type: ignore[no-redef]
        except ImportError:
            print("prepare, prompt and token states cold: - (this tree keeps no token states)")
            return

    def forget_all() -> None:
        hybrid.forget_query_vectors()
        kept.forget()

    cold = _percentiles(timed(prompts, forget_all))
    print(f"prepare, prompt and token states cold: {cold}")


if __name__ == "__main__":
    main()
