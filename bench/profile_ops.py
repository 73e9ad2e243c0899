"""Where each served operation's milliseconds go: a cProfile of remember, prepare and
search through the real stack (waitress, Django's middleware, DRF, the services), one
keep-alive client, one worker thread.

    .venv/bin/python bench/profile_ops.py                    # 1,000 entries, 60 calls each
    .venv/bin/python bench/profile_ops.py --entries 300 --calls 20 --top 40
    .venv/bin/python bench/profile_ops.py --save /tmp/prof   # one .pstats per operation

The server runs in this process (``server.serving.Server`` on a thread, port 0, a fresh
POWERCONTEXT_HOME) so the worker thread can be profiled request by request: a WSGI
wrapper enables one ``cProfile.Profile`` per operation around each call. The workload is
bench/versus_reference.py's (bench/corpus.py's entries, the committed prompts and
queries). For each operation it prints the p50 latency seen by the client, the profiled
time per call split into buckets (embedding, redaction, lexical, vectors, the relevance
decision, pack building, rendering, DB, HTTP and middleware), and the top functions by
own time.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import served, workload

# Where a function's own time is counted, first match wins: (bucket, path fragments).
BUCKETS: list[tuple[str, tuple[str, ...]]] = [
    ("embedding", ("onnxruntime", "powercontext/embedding/", "tokenizers")),
    ("redaction", ("powercontext/redaction",)),
    (
        "relevance decision",
        (
            "search/relevance",
            "search/query.py",
            "search/focus",
            "search/fusion",
        ),
    ),
    ("vectors", ("search/vectors", "search/hybrid", "search/catch_up", "numpy")),
    ("lexical", ("search/",)),
    ("pack building", ("contextpack/",)),
    ("memory services", ("memory/",)),
    ("rendering", ("rest_framework/renderers", "/json/", "renderers.py", "rendering.py")),
    ("DB", ("django/db/", "sqlite3", "MySQLdb")),
    ("validation", ("rest_framework/serializers", "rest_framework/fields", "serializers.py")),
    ("HTTP and middleware", ("waitress", "django/", "rest_framework", "server/", "whitenoise")),
]


# C functions (cProfile names them ``~``) by what they are called: (bucket, fragments).
BUILTINS: list[tuple[str, tuple[str, ...]]] = [
    ("embedding", ("onnxruntime", "tokenizers", "encode_batch")),
    ("DB", ("sqlite", "sqlean", "Cursor", "Connection", "MySQLdb")),
    ("vectors", ("numpy", "einsum", "ndarray", "ufunc")),
]


def bucket_of(filename: str, function: str = "") -> str:
    if filename.startswith("~") or filename.startswith("<"):
        for name, fragments in BUILTINS:
            if any(fragment in function for fragment in fragments):
                return name
        return "builtins"
    for name, fragments in BUCKETS:
        if any(fragment in filename for fragment in fragments):
            return name
    return "other"


class Profiling:
    """A WSGI wrapper: each request whose path is in ``profiles`` runs under its profile."""

    def __init__(self, application, paths: dict[str, str]) -> None:
        self.application = application
        self.paths = paths
        self.profiles: dict[str, cProfile.Profile] = {}
        self.calls: dict[str, int] = {}
        self.active = False

    def __call__(self, environ, start_response):
        name = self.paths.get(environ.get("PATH_INFO", ""))
        if not (self.active and name):
            return self.application(environ, start_response)
        profile = self.profiles.setdefault(name, cProfile.Profile())
        self.calls[name] = self.calls.get(name, 0) + 1
        profile.enable()
        try:
            return list(self.application(environ, start_response))
        finally:
            profile.disable()


def summarise(profile: cProfile.Profile | pstats.Stats, calls: int, top: int) -> str:
    """Per call: the profiled time by bucket and the top functions by own time. ``calls``
    0: counted from the profile (the calls of Django's WSGI handler)."""
    stats = profile if isinstance(profile, pstats.Stats) else pstats.Stats(profile)
    if not calls:
        calls = max(
            (n for (f, _, name), (n, *_) in stats.stats.items() if name == "get_response"),  # type: ignore[attr-defined]
            default=1,
        )
    buckets: dict[str, float] = {}
    total = 0.0
    rows = []
    for (filename, line, function), (_, _, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        bucket = bucket_of(filename, function)
        buckets[bucket] = buckets.get(bucket, 0.0) + own
        total += own
        rows.append((own, cumulative, f"{_short(filename)}:{line}({function})"))
    lines = [f"  profiled {total * 1000 / calls:.2f} ms a call ({calls} calls)"]
    for name, seconds in sorted(buckets.items(), key=lambda item: -item[1]):
        lines.append(f"    {name:<22} {seconds * 1000 / calls:7.2f} ms")
    lines.append("  top functions by own time (ms a call, own / cumulative):")
    for own, cumulative, where in sorted(rows, reverse=True)[:top]:
        lines.append(f"    {own * 1000 / calls:6.2f} {cumulative * 1000 / calls:7.2f}  {where}")
    return "\n".join(lines)


def _short(filename: str) -> str:
    for marker in ("site-packages/", "speed/", "python3.11/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--embeddings", choices=("on", "off"), default="on")
    parser.add_argument("--save", type=Path, help="a directory for one .pstats per operation")
    parser.add_argument(
        "--load", type=Path, help="summarise the .pstats saved in this directory, run nothing"
    )
    args = parser.parse_args()
    if args.load:
        for saved in sorted(args.load.glob("*.pstats")):
            print(f"\n## {saved.stem}")
            print(summarise(pstats.Stats(str(saved)), 0, args.top))
        return 0

    home = Path(tempfile.mkdtemp(prefix="pc-profile-"))
    os.environ.update(POWERCONTEXT_HOME=str(home), DJANGO_SETTINGS_MODULE="server.settings")
    if args.embeddings == "off":
        os.environ["POWERCONTEXT_EMBEDDINGS"] = "off"
    import django

    django.setup()
    from django.core.management import call_command
    from django.core.servers.basehttp import get_internal_wsgi_application

    from powercontext.search import hybrid
    from server.serving import Server

    call_command("migrate", verbosity=0)
    hybrid.can_embed()
    paths = {
        "/v1/memory/remember": "remember",
        "/v1/context/prepare": "prepare",
        "/v1/memory/search": "search",
    }
    wrapper = Profiling(get_internal_wsgi_application(), paths)
    server = Server(wrapper, host="127.0.0.1", port=0, threads=1)
    thread = threading.Thread(target=server.run, kwargs={"grace": 1.0}, daemon=True)
    thread.start()
    client = served.Client("127.0.0.1", server.port)
    ours = workload.Ours(client)
    ours.create_scope(workload.SCOPE)
    texts = workload.entries(args.entries + args.calls)
    latencies: dict[str, list[float]] = {name: [] for name in paths.values()}
    for text in texts[: args.entries]:
        ours.remember(workload.SCOPE, text)
    wrapper.active = True
    for text in texts[args.entries :]:
        latencies["remember"].append(ours.remember(workload.SCOPE, text))
    prompts, queries = workload.prompts(args.calls), workload.queries(args.calls)
    for prompt, query in zip(prompts, queries, strict=True):
        latencies["prepare"].append(ours.prepare(workload.SCOPE, prompt))
        latencies["search"].append(ours.search(workload.SCOPE, query))
    wrapper.active = False
    server.request_stop(immediately=True)
    thread.join()
    for name, profile in wrapper.profiles.items():
        p50 = served.percentile(latencies[name], 0.5) * 1000
        print(f"\n## {name}: p50 {p50:.2f} ms at the client")
        print(summarise(profile, wrapper.calls[name], args.top))
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            profile.dump_stats(args.save / f"{name}.pstats")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
