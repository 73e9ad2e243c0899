"""Hook wall time, process start to exit, against a live server holding many entries.

    .venv/bin/python bench/hook_latency.py                      # start a server, seed 10,000
    .venv/bin/python bench/hook_latency.py --url http://127.0.0.1:8000 --token T --no-seed

For each of ``--runs`` rounds (100) it times, in the same loop so both see the same
machine load, a bare ``python3 -c pass`` and one hook process (the command the installer
registers: ``python3 -S hooks/codex_user_prompt_submit.py``) fed real hook JSON for the
next prompt of ``bench/prompts/hook_prompts.json``, prompt capture on, a new turn each
time. It prints p50/p95 of both and fails (exit 1) when the hook's median exceeds the
bare interpreter's median by more than ``--budget-ms`` (50), or when any hook run did not
end in ready/empty.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.served import ServerProcess, Store, manage, percentile  # noqa: E402

HOOK = ROOT / "hooks" / "codex_user_prompt_submit.py"
PROMPTS = ROOT / "bench" / "prompts" / "hook_prompts.json"
SCOPE = "git:example.com/bench/hook-latency"

SUBJECTS = [
    "the FTS5 index",
    "OceanBase migrations",
    "the analyzer",
    "the Context Pack builder",
    "the review queue",
    "prompt capture",
    "the remember service",
    "revision manifests",
    "the admin",
    "CI",
    "the hook installer",
    "search tie-breaks",
    "seekdb",
    "WAL mode",
    "the secret key",
    "reviewer tokens",
    "the OpenAPI schema",
    "health checks",
    "candidate approval",
    "stale citations",
    "rebuild_index",
    "the capabilities endpoint",
]
VERBS = [
    "must be run after",
    "breaks when combined with",
    "is configured through",
    "is tested by",
    "was rewritten because of",
    "depends on",
    "must never touch",
    "is documented next to",
    "got slower after",
    "is guarded by",
]
DETAILS = [
    "run ruff before committing",
    "use compare-and-swap on the head revision",
    "never log the query",
    "bind user text as a parameter",
    "keep the JSON compact",
    "set a busy timeout of 30 s",
    "restart seekdb between suites",
    "pin the golden tests",
    "count bytes, not characters",
    "quote table names through the connection",
    "prefer keyset pagination",
    "truncate at a code-point boundary",
]


def post(base, token, path, body):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def start_server(home, token):
    """A migrated SQLite store in ``home`` served on a free loopback port, with ``token``."""
    store = Store("sqlite", Path(home), extra_env={"POWERCONTEXT_API_TOKEN": token})
    migrated = manage(store, "migrate", "--noinput")
    if migrated.returncode != 0:
        raise SystemExit(f"migrate failed:\n{migrated.stderr[-3000:]}")
    return ServerProcess(store, log_name=None).start()


def seed(base, token, count):
    rng = random.Random(28)

    def text(i):
        subject, verb, other = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(SUBJECTS)
        return f"{subject.capitalize()} {verb} {other}; {rng.choice(DETAILS)} (note {i})."

    texts = [text(i) for i in range(count)]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(
                lambda t: post(
                    base,
                    token,
                    "/v1/memory/remember",
                    {"scope_id": SCOPE, "kind": "note", "text": t},
                ),
                texts,
            )
        )
    print(f"seeded {count} entries in {time.monotonic() - started:.1f} s")


def timed(argv, data, env):
    started = time.perf_counter()
    done = subprocess.run(argv, input=data, capture_output=True, env=env, check=False)
    return (time.perf_counter() - started) * 1000, done


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="use this running server instead of starting one")
    parser.add_argument("--token", default=None, help="its API token, if it has one")
    parser.add_argument("--entries", type=int, default=10000)
    parser.add_argument("--no-seed", action="store_true", help="the scope is already seeded")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--python", default=sys.executable, help="interpreter for both")
    parser.add_argument("--budget-ms", type=float, default=50.0)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    prompts = json.loads(PROMPTS.read_text(encoding="utf-8"))["prompts"]
    server = None
    with tempfile.TemporaryDirectory() as home:
        token = args.token
        if args.url:
            base = args.url.rstrip("/")
        else:
            token = token or "bench-token"
            server = start_server(home, token)
            base = server.url
        try:
            if not args.no_seed:
                seed(base, token, args.entries)
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": home,
                "POWERCONTEXT_URL": base,
                "POWERCONTEXT_SCOPE_ID": SCOPE,
            }
            if token:
                env["POWERCONTEXT_API_TOKEN"] = token
            hook_argv = [args.python, "-S", str(HOOK)]
            bare_argv = [args.python, "-c", "pass"]
            # For reference: the hook runs with -S, which skips site-packages.
            bare_s_argv = [args.python, "-S", "-c", "pass"]
            # Warm up: bytecode cache, page cache, server connection pools.
            for _ in range(3):
                timed(bare_argv, b"", env)
                timed(hook_argv, json.dumps({"hook_event_name": "Stop"}).encode(), env)
            bare, bare_s, hooked, outcomes = [], [], [], {}
            for i in range(args.runs):
                payload = {
                    "session_id": "bench-session",
                    "turn_id": f"bench-turn-{os.getpid()}-{i}",
                    "transcript_path": None,
                    "cwd": str(ROOT),
                    "hook_event_name": "UserPromptSubmit",
                    "model": "gpt-5-codex",
                    "permission_mode": "default",
                    "prompt": prompts[i % len(prompts)],
                }
                elapsed, _ = timed(bare_argv, b"", env)
                bare.append(elapsed)
                bare_s.append(timed(bare_s_argv, b"", env)[0])
                elapsed, done = timed(hook_argv, json.dumps(payload).encode(), env)
                hooked.append(elapsed)
                if done.stdout:
                    outcome = "ready"
                else:
                    outcome = json.loads(done.stderr.decode().splitlines()[0])["outcome"]
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
        finally:
            if server is not None:
                server.stop()

    result = {
        "runs": args.runs,
        "entries": None if args.no_seed else args.entries,
        "bare_p50_ms": statistics.median(bare),
        "bare_p95_ms": percentile(bare, 0.95),
        "bare_S_p50_ms": statistics.median(bare_s),
        "hook_p50_ms": statistics.median(hooked),
        "hook_p95_ms": percentile(hooked, 0.95),
        "outcomes": outcomes,
    }
    result["overhead_p50_ms"] = result["hook_p50_ms"] - result["bare_p50_ms"]
    print(
        "python3 -c pass   p50 {:7.1f} ms   p95 {:7.1f} ms".format(
            result["bare_p50_ms"], result["bare_p95_ms"]
        )
    )
    print("python3 -S -c pass p50 {:6.1f} ms".format(result["bare_S_p50_ms"]))
    print(
        "hook (capture on) p50 {:7.1f} ms   p95 {:7.1f} ms".format(
            result["hook_p50_ms"], result["hook_p95_ms"]
        )
    )
    print(
        "median overhead   {:7.1f} ms (budget {:.0f} ms); outcomes {}".format(
            result["overhead_p50_ms"], args.budget_ms, outcomes
        )
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    failed = result["overhead_p50_ms"] > args.budget_ms or set(outcomes) - {"ready", "empty"}
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
