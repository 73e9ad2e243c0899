"""Archive benchmark: ``manage.py export`` and ``manage.py import`` at a given size.

    .venv/bin/python bench/archive_bench.py --engine sqlite --entries 10000 100000
    .venv/bin/python bench/archive_bench.py --engine oceanbase --entries 10000 100000
    .venv/bin/python bench/archive_bench.py --ci        # 1,000 entries on SQLite

For each size, in fresh data directories (on OceanBase: fresh databases on one embedded
seekdb, or on ``--oceanbase-url``):

1. seed one scope of N Memory entries (``tests/powercontext/archive/archive_history.py``
   ``bulk_memory``: the rows ``memory_remember`` writes, one revision each, by bulk
   INSERTs, then every 1,000th revised, every 1,500th retired, one reactivated through the
   services) and its derived data;
2. baseline, same run, same database: ``check_integrity`` (it reads the same rows and
   recomputes the same hashes an export checks);
3. ``export`` in its own process: wall and CPU seconds, entries per second, peak RSS
   (the child's own, from wait4), archive size;
4. ``import`` into a fresh database: the same figures, and its phases from its output
   (verifying pass; writing, rebuilding and checking each scope; vectors);
5. baseline, same run, on the imported database: ``rebuild_index`` after its derived
   Memory data was wiped, then ``check_integrity``: the derived work a restore needs;
6. the round trip: the imported database's export holds the same records, byte for
   byte, as the first;
7. ``--tamper`` one-byte changes at random offsets, and a cut, in this process
   (``archive_verify``): each must be refused naming the line that holds the offset.

Vectors are off unless ``--embeddings`` (re-embedding is ``rebuild_index``'s cost,
measured by bench/vector_bench.py, and would hide the archive's own). The machine's
other load shows in wall time, not in CPU time: both are printed. Exit status 1 if the
round trip or a refusal fails.
"""

import argparse
import bisect
import itertools
import json
import os
import random
import re
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.served import (  # noqa: E402
    Completed,
    Store,
    manage,
    markdown_table,
    open_store,
    patient,
)

SCOPE = "bench:archive"
VERIFIED = re.compile(r"Verified [\d,]+ records .* in ([0-9.]+)s")
EXPORTED = re.compile(r"rows \(.*\) in ([0-9.]+)s")
WROTE = re.compile(r"rebuilt and checked each scope in ([0-9.]+)s .* vectors in ([0-9.]+)s")


def measured(store: Store, *args: str) -> Completed:
    done = manage(store, *args, timeout=24 * 3600)
    if done.returncode != 0:
        raise RuntimeError(
            f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}{done.stdout[-3000:]}"
        )
    return done


def same_records(first: Path, second: Path) -> bool:
    """Whether the two archives hold the same records but for the header's time and
    engine and the manifest's whole-file digest (which covers the header): streamed."""
    with first.open("rb") as one, second.open("rb") as other:
        for left, right in itertools.zip_longest(one, other):
            if left is None or right is None:
                return False
            a, b = json.loads(left)["record"], json.loads(right)["record"]
            if a.get("type") in ("archive", "manifest"):
                for record in (a, b):
                    record.pop("created_at", None)
                    record.pop("source", None)
                    record.pop("sha256", None)
            if a != b:
                return False
    return True


def seed(store: Store, entries: int) -> Completed:
    return measured(
        store,
        "shell",
        "--no-imports",
        "-c",
        "from django.core.management import call_command\n"
        "from tests.powercontext.archive.archive_history import bulk_memory\n"
        "call_command('migrate', verbosity=0)\n"
        f"bulk_memory({SCOPE!r}, {entries})\n",
    )


def figures(
    name: str, done: Completed, entries: int, inner: float | None = None
) -> tuple[str, ...]:
    """A table row; ``inner``: the seconds the command itself reports (its work, without
    the process's start: Django, and the model when it loads)."""
    return (
        name,
        f"{done.seconds:.1f}",
        "-" if inner is None else f"{inner:.1f}",
        "-" if inner is None else f"{entries / inner:,.0f}",
        f"{done.cpu_seconds:.1f}",
        f"{entries / done.cpu_seconds:,.0f}" if done.cpu_seconds else "-",
        f"{done.peak_rss_kib / 1024:,.0f}",
    )


def tamper_check(archive: Path, samples: int, seed_value: int) -> tuple[int, int, list[str]]:
    """(refused naming the right line, tried, what went wrong) for ``samples`` one-byte
    changes and one cut."""
    from powercontext.archive.format import ArchiveRefused
    from powercontext.archive.importer import archive_verify

    data = archive.read_bytes()
    starts = [0] + [index + 1 for index, byte in enumerate(data) if byte == 0x0A]
    rng = random.Random(seed_value)
    target = archive.with_name("tampered.jsonl")
    right, problems = 0, []
    offsets = rng.sample(range(len(data)), samples)
    for offset in offsets:
        changed = bytearray(data)
        changed[offset] = (changed[offset] + rng.randrange(1, 256)) % 256
        target.write_bytes(bytes(changed))
        line = bisect.bisect_right(starts, offset)
        try:
            archive_verify(target)
            problems.append(f"offset {offset}: accepted")
        except ArchiveRefused as error:
            if error.line == line:
                right += 1
            else:
                problems.append(f"offset {offset}: named line {error.line}, not {line}")
    cut = rng.randrange(1, len(data))
    target.write_bytes(data[:cut])
    try:
        archive_verify(target)
        problems.append(f"cut at {cut}: accepted")
    except ArchiveRefused:
        right += 1
    target.unlink()
    return right, samples + 1, problems


def _seconds(pattern: re.Pattern[str], output: str) -> float:
    found = pattern.search(output)
    if found is None:
        raise RuntimeError(f"no {pattern.pattern!r} in: {output[-1000:]}")
    return float(found.group(1))


def run_size(args: argparse.Namespace, entries: int, work: Path) -> tuple[list, dict]:
    url = args.oceanbase_url
    source = open_store(args.engine, work / "source", oceanbase_url=url)
    stores = [source]
    try:
        if args.engine == "oceanbase" and url is None:
            url = source.server_url  # the second database on the same seekdb
        target = open_store(args.engine, work / "target", oceanbase_url=url)
        stores.append(target)
        for store in stores:
            if not args.embeddings:
                store.extra_env["POWERCONTEXT_EMBEDDINGS"] = "off"
        print(f"seeding {entries:,} entries ({args.engine})...", flush=True)
        seeded = seed(source, entries)
        check = measured(source, "check_integrity", "--scope", SCOPE)
        first = work / "first.jsonl"
        export = measured(source, "export", "--scope", SCOPE, "--out", str(first))
        measured(target, "migrate", "--verbosity", "0")
        imported = measured(target, "import", str(first))
        verify_s = _seconds(VERIFIED, imported.stdout)
        write_s = _seconds(WROTE, imported.stdout)
        vector_s = float(WROTE.search(imported.stdout).group(2))  # type: ignore[union-attr]
        second = work / "second.jsonl"
        measured(target, "export", "--scope", SCOPE, "--out", str(second))
        identical = same_records(first, second)
        print(
            f"export {export.seconds:.1f} s wall, {export.cpu_seconds:.1f} s CPU, "
            f"{export.peak_rss_kib / 1024:.0f} MiB; import {imported.seconds:.1f} s wall, "
            f"{imported.cpu_seconds:.1f} s CPU, {imported.peak_rss_kib / 1024:.0f} MiB; "
            f"identical: {identical}",
            flush=True,
        )
        recheck = measured(target, "check_integrity", "--scope", SCOPE)
        measured(patient(target), "shell", "--no-imports", "-c", _WIPE)
        rebuild = measured(patient(target), "rebuild_index", "--scope", SCOPE)
        os.environ.clear()
        os.environ.update(target.env())
        import django

        django.setup()
        # Each verification reads the archive up to the change: fewer changes when large.
        samples = args.tamper if entries <= 10_000 else max(10, args.tamper * 10_000 // entries)
        right, tried, problems = tamper_check(first, samples, args.seed)
        size = first.stat().st_size
        rows = [
            figures("export", export, entries, _seconds(EXPORTED, export.stdout)),
            figures("  baseline: check_integrity (source)", check, entries),
            figures("import (all phases)", imported, entries, verify_s + write_s + vector_s),
            (
                f"  verify {verify_s:.1f} s, write+rebuild+check {write_s:.1f} s, "
                f"vectors {vector_s:.1f} s",
                *[""] * 6,
            ),
            figures("  baseline: rebuild_index (target)", rebuild, entries),
            figures("  baseline: check_integrity (target)", recheck, entries),
        ]
        result = {
            "engine": args.engine,
            "entries": entries,
            "seed_seconds": seeded.seconds,
            "archive_bytes": size,
            "export": vars(export) | {"stdout": export.stdout[-500:], "stderr": ""},
            "import": vars(imported) | {"stdout": imported.stdout[-1500:], "stderr": ""},
            "verify_seconds": verify_s,
            "write_seconds": write_s,
            "vector_seconds": vector_s,
            "check_seconds": check.seconds,
            "rebuild_seconds": rebuild.seconds,
            "recheck_seconds": recheck.seconds,
            "identical": identical,
            "tamper_refused": right,
            "tamper_tried": tried,
            "tamper_problems": problems,
        }
        return rows, result
    finally:
        for store in stores:
            store.close(drop=True)


# Deletes the imported scope's derived Memory rows (projection and term statistics) a
# thousand at a time, so that rebuild_index rebuilds them all: bench/django_tasks.py
# wipe-derived, for one scope.
_WIPE = (
    "from memory.models import MemoryActiveEntry, MemoryTermStat\n"
    "for model in (MemoryActiveEntry, MemoryTermStat):\n"
    f"    rows = model.objects.filter(scope_id={SCOPE!r})\n"
    "    while keys := list(rows.values_list('pk', flat=True)[:1000]):\n"
    "        model.objects.filter(pk__in=keys).delete()\n"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=["sqlite", "oceanbase"], default="sqlite")
    parser.add_argument("--entries", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--oceanbase-url", help="an OceanBase to use instead of seekdb")
    parser.add_argument("--embeddings", action="store_true", help="embed the vectors too")
    parser.add_argument(
        "--tamper",
        type=int,
        default=200,
        help="one-byte changes to try at 10,000 entries or fewer (scaled down beyond)",
    )
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--data-dir", type=Path, help="work directory (default: a new one)")
    parser.add_argument("--json", type=Path, help="write every figure here as JSON")
    parser.add_argument("--ci", action="store_true", help="1,000 entries, 20 changes")
    args = parser.parse_args(argv)
    if args.ci:
        args.entries, args.tamper = [1000], 20
    work = args.data_dir or Path(tempfile.mkdtemp(prefix="powercontext-archive-bench-"))
    header = (
        "step",
        "wall s",
        "in-command s",
        "entries/s (in-command)",
        "CPU s",
        "entries/s (CPU)",
        "peak RSS MiB",
    )
    results, passed = [], True
    for entries in args.entries:
        rows, result = run_size(args, entries, work / f"n{entries}")
        results.append(result)
        ok = result["identical"] and result["tamper_refused"] == result["tamper_tried"]
        passed = passed and ok
        print(
            f"\n{args.engine}, {entries:,} entries (seeded in {result['seed_seconds']:.0f} s), "
            f"archive {result['archive_bytes'] / 1e6:.1f} MB\n"
        )
        print(markdown_table(header, rows))
        print(
            f"\nround trip: the re-export's records are "
            f"{'byte-identical' if result['identical'] else 'DIFFERENT'}; "
            f"one-byte changes and a cut refused naming their line: "
            f"{result['tamper_refused']}/{result['tamper_tried']}"
        )
        for problem in result["tamper_problems"][:10]:
            print(f"  - {problem}")
        sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
