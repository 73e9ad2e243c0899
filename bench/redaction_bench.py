"""What redaction adds to a request: capture, prepare and remember at their largest
inputs, with redaction on and off, interleaved in the same run.

    .venv/bin/python bench/redaction_bench.py            # 40 requests per route and mode
    .venv/bin/python bench/redaction_bench.py --ci       # 5, a smoke run
    .venv/bin/python bench/redaction_bench.py --adversarial   # the detector on crafted input

``--adversarial`` times the detector alone (no Django) on the inputs the property test
``test_redaction_work_is_linear`` generates (keyword runs, near-matches, long tokens,
encoded runs), at 8,192 and 200,000 characters, against a plain scan of the same text
(one pass of a word pattern), and prints the ratio: a super-linear detector shows as a ratio
that grows with the length. Each figure is the best of 5, in CPU milliseconds.

In one process, on a fresh data directory (the embedded SQLite default), through
Django's test client (the view, the service and the database; no socket). Each route
gets its largest allowed input: an 8,192-character prompt for prepare (the hook cuts
prompts there) and for capture, an 8,192-byte note for remember (the OpenAPI limit).
Two prompts: ``prose``, the committed coding-agent prompts run together, and
``dense``, a worst case made of credential assignments and tokens on every line (every
line names a keyword, so the keyword patterns run on all of them). "Off" is the same
code with the detector and the private-span cut replaced by identity functions, so the
difference is what redaction costs. The detector's own time on each input is printed
too. Figures are medians and 95th percentiles in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPT_CHARS = 8192
NOTE_BYTES = 8192
SCOPE = "bench:redaction"


def setup_django(home: Path) -> None:
    os.environ["POWERCONTEXT_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "server.settings"
    os.environ.pop("POWERCONTEXT_DATABASE_URL", None)
    os.environ.pop("POWERCONTEXT_API_TOKEN", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def prose() -> str:
    prompts = json.loads((ROOT / "bench/prompts/prepare_prompts.json").read_text())["prompts"]
    text = "\n\n".join(prompts)
    while len(text) < PROMPT_CHARS:
        text += "\n\n" + text
    return text[:PROMPT_CHARS]


def dense() -> str:
    lines = [
        "password=Tr0ub4dor&3-horse-{n}",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8kPrn{n:03d}",
        "api_key: 'sk_live_4eC39HqLyjWDarjtT1zd{n:04d}'",
        "token ghp_R7kPq2Wm9Xv4Ls8Tn3Yb6Hc1Jd5Fg0Aa{n:04d}",
        'db_password := "hunter{n}"',
    ]
    out, n = [], 0
    while sum(len(line) + 1 for line in out) < PROMPT_CHARS:
        out.append(lines[n % len(lines)].format(n=n))
        n += 1
    return "\n".join(out)[:PROMPT_CHARS]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class Switch:
    """Turns the detector and the private-span cut off (identity) and on again."""

    def __init__(self) -> None:
        from powercontext import redaction

        self.module = redaction
        self.real = (redaction.redact, redaction.strip_private)

    def set(self, on: bool) -> None:
        redact, strip = self.real if on else (self.module.Redacted, self.module.Redacted)
        self.module.redact, self.module.strip_private = redact, strip


# Crafted inputs: one unit repeated to the length wanted (what the property test draws
# from, and the shapes that made the detector of issue 38 super-linear).
ADVERSARIAL_UNITS = {
    "prose (baseline shape)": None,
    "keyword run pwd_": "pwd_",
    "keyword run password=": "password=",
    "keyword run ;Password=": ";Password=",
    "keyword run api_key: ": "api_key: ",
    "json key run": '"password": "',
    "value on next line": "password=\n",
    "near-match ghp_ + 35": "ghp_" + "a" * 35 + " ",
    "near-match sk- run": "sk-",
    "near-match AKIA": "AKIA",
    "url ://a:b": "://a:b",
    "authorization run": "Authorization: ",
    "bearer run": "Bearer 1",
    "mysql -p run": "mysql -pa ",
    "pem begin run": "-----BEGIN PRIVATE KEY-----\n",
    "long token (alnum)": "a",
    "long token (base64)": "QUFB",
    "percent escapes": "%41",
    "jwt-ish": "eyJa.",
}


def adversarial(lengths: tuple[int, ...] = (8192, 200_000)) -> int:
    import re

    from powercontext.redaction import redact

    scan = re.compile(r"\w+")

    def best(call, text: str) -> float:
        times = []
        for _ in range(5):
            started = time.process_time()
            call(text)
            times.append((time.process_time() - started) * 1000)
        return min(times)

    header = " | ".join(f"{n:,} ms | scan | ratio" for n in lengths)
    print(f"| input | {header} |")
    print("|---|" + "---:|" * (3 * len(lengths)))
    base = prose()
    for name, unit in ADVERSARIAL_UNITS.items():
        cells = []
        for length in lengths:
            source = base if unit is None else unit
            text = (source * (length // len(source) + 1))[:length]
            spent, plain = best(redact, text), best(scan.findall, text)
            cells.append(f"{spent:.1f} | {plain:.2f} | {spent / max(plain, 0.01):.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--ci", action="store_true", help="5 requests per route and mode")
    parser.add_argument(
        "--adversarial", action="store_true", help="the detector alone on crafted input"
    )
    args = parser.parse_args()
    if args.adversarial:
        return adversarial()
    count = 5 if args.ci else args.requests
    with tempfile.TemporaryDirectory(prefix="pc-redaction-bench-") as home:
        setup_django(Path(home))
        return run(count)


def run(count: int) -> int:
    from django.test import Client

    from powercontext.redaction import redact

    client = Client()
    switch = Switch()
    inputs = {"prose": prose(), "dense": dense()}
    note = (inputs["prose"].encode()[:NOTE_BYTES]).decode("utf-8", "ignore").strip()
    # Something for prepare to find: remembered with redaction on.
    for text in inputs["prose"].split("\n\n")[:40]:
        client.post(
            "/v1/memory/remember",
            {"scope_id": SCOPE, "kind": "note", "text": text[:2000]},
            content_type="application/json",
        )

    print(f"detector alone, {PROMPT_CHARS} characters, median of 50 (ms):")
    for name, text in inputs.items():
        redact(text)
        times = []
        for _ in range(50):
            started = time.perf_counter()
            redact(text)
            times.append((time.perf_counter() - started) * 1000)
        found = redact(text).count
        print(f"  {name:<6} {statistics.median(times):6.2f}   ({found} secrets found)")

    serial = [0]

    def capture(text: str) -> int:
        serial[0] += 1
        return client.post(
            "/v1/sources/content",
            {"scope_id": SCOPE, "source_id": f"bench-{serial[0]}", "content": text},
            content_type="application/json",
        ).status_code

    def prepare(text: str) -> int:
        return client.post(
            "/v1/context/prepare",
            {"scope_id": SCOPE, "query": text, "max_bytes": 8000},
            content_type="application/json",
        ).status_code

    def remember(text: str) -> int:
        serial[0] += 1
        body = f"{serial[0]:06d} {text}"[: len(text)]
        return client.post(
            "/v1/memory/remember",
            {"scope_id": SCOPE, "kind": "note", "text": body},
            content_type="application/json",
        ).status_code

    routes = [
        ("capture", "prose", capture, inputs["prose"]),
        ("capture", "dense", capture, inputs["dense"]),
        ("prepare", "prose", prepare, inputs["prose"]),
        ("prepare", "dense", prepare, inputs["dense"]),
        ("remember", "prose", remember, note),
    ]
    print()
    print("| route | input | off p50 | on p50 | added p50 | off p95 | on p95 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    failed = False
    for route, name, call, text in routes:
        timings: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(2):  # warm both modes
            for on in (False, True):
                switch.set(on)
                call(text)
        for index in range(2 * count):
            on = index % 2 == 1
            switch.set(on)
            started = time.perf_counter()
            status = call(text)
            timings[on].append((time.perf_counter() - started) * 1000)
            if status not in (200, 202):
                failed = True
                print(f"{route} answered {status}", file=sys.stderr)
        switch.set(True)
        off, on_ = timings[False], timings[True]
        print(
            f"| {route} | {name} | {statistics.median(off):.1f} | {statistics.median(on_):.1f} "
            f"| {statistics.median(on_) - statistics.median(off):+.1f} "
            f"| {percentile(off, 0.95):.1f} | {percentile(on_, 0.95):.1f} |"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
