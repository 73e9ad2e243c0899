"""How long a new process takes to have the embedding model ready, and what its check costs.

    .venv/bin/python bench/model_load.py              # 5 rounds
    .venv/bin/python bench/model_load.py --rounds 10

Each round starts a new interpreter as ``serve`` starts on a new machine: HOME,
XDG_CACHE_HOME and TMPDIR are new empty directories, so nothing is cached anywhere. It
loads the process-wide model and embeds one text. Printed per round and as medians: the
wall time from spawning the process to the model ready (interpreter start, imports, the
files' check, the ONNX Runtime session), the load alone (``Embedder.load``), the check
alone (reading the model and vocabulary and hashing them, timed in the same process
after the load), whether anything was written under the empty directories, and resident
memory after the first embedding.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
from powercontext import embedding
from powercontext.embedding import model_file
model = embedding.embedder()
ready = time.time()
model.embed_query("where is the billing service deployed?")
rss = 0
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"):
        rss = int(line.split()[1]) / 1024
started = time.perf_counter()
model_file.load(model_file.chosen())
check = time.perf_counter() - started
print(json.dumps({"ready_at": ready, "load_s": model.load.seconds, "check_s": check,
                  "rss_mb": rss, "identity": model.identity}))
"""


def one_round() -> dict[str, float | str | bool]:
    with tempfile.TemporaryDirectory(prefix="model-load-") as empty:
        home, cache, scratch = (Path(empty) / name for name in ("home", "cache", "tmp"))
        for directory in (home, cache, scratch):
            directory.mkdir()
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CACHE_HOME": str(cache),
            "TMPDIR": str(scratch),
            "PYTHONPATH": str(ROOT),
        }
        env.pop("POWERCONTEXT_EMBEDDING_FORM", None)
        spawned = time.time()
        done = subprocess.run(
            [sys.executable, "-c", CHILD],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        written = [
            str(path.relative_to(empty))
            for path in Path(empty).rglob("*")
            if path.is_file() and path.name != ".ses"  # this environment's start-up file
        ]
    return {
        "ready_s": result["ready_at"] - spawned,
        "load_s": result["load_s"],
        "check_s": result["check_s"],
        "rss_mb": result["rss_mb"],
        "identity": result["identity"],
        "wrote": ", ".join(written) or "nothing",
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rounds = []
    for number in range(args.rounds):
        found = one_round()
        rounds.append(found)
        print(
            f"round {number + 1}: ready {found['ready_s']:.3f} s after spawning "
            f"(load {found['load_s']:.3f} s, check {1000 * float(found['check_s']):.1f} ms), "
            f"RSS {found['rss_mb']:.0f} MB, wrote {found['wrote']}",
            flush=True,
        )

    def median(key: str) -> float:
        return statistics.median(float(found[key]) for found in rounds)

    print(
        f"median of {args.rounds}: ready {median('ready_s'):.3f} s, load {median('load_s'):.3f} s, "
        f"check {1000 * median('check_s'):.1f} ms, RSS {median('rss_mb'):.0f} MB; "
        f"model {rounds[0]['identity']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
