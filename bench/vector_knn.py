"""sqlite-vec's brute-force KNN on the default engine: k=8 over float[384] rows.

Builds vec0 tables of N random unit vectors (the model's dimension) in a scratch SQLite
file opened through powercontext's engine (sqlean + sqlite-vec), and times
``WHERE embedding MATCH ? AND k = 8`` over warm pages:

- ``float``: ``float[384] distance_metric=cosine``, all rows in one partition;
- ``float, 1 of 10 partitions``: the same rows spread over 10 ``partition key`` values,
  the query restricted to one (a scope with a tenth of the entries);
- ``float, l2``: as ``float`` with ``distance_metric=l2`` (the same order for unit
  vectors: |a - b|^2 = 2 - 2 cos);
- ``int8``: ``int8[384]`` (``vec_quantize_int8(v, 'unit')``), cosine;
- ``bit``: ``bit[384]`` (``vec_quantize_binary``), hamming distance.

    .venv/bin/python bench/vector_knn.py                  # 10,000 and 100,000 rows
    .venv/bin/python bench/vector_knn.py --rows 10000

Bounded: the 100,000-row tables take about a minute to fill on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sqlean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from powercontext.db.backends.sqlite.base import load_sqlite_vec

DIMENSION = 384
K = 8
QUERIES = 30

LAYOUTS = {
    "float": ("embedding float[384] distance_metric=cosine", "?", 1),
    "float, 1 of 10 partitions": (
        "scope integer partition key, embedding float[384] distance_metric=cosine",
        "?",
        10,
    ),
    "float, l2": ("embedding float[384] distance_metric=l2", "?", 1),
    "int8": ("embedding int8[384] distance_metric=cosine", "vec_quantize_int8(?, 'unit')", 1),
    "bit": ("embedding bit[384]", "vec_quantize_binary(?)", 1),
}


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIMENSION)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def measure(db: sqlean.Connection, name: str, rows: int, rng: np.random.Generator) -> dict:
    column, value, partitions = LAYOUTS[name]
    table = f"knn_{len(name)}_{rows}_{partitions}"
    db.execute(f"CREATE VIRTUAL TABLE {table} USING vec0({column})")
    started = time.perf_counter()
    partitioned = partitions > 1
    # The table name and the value expressions are this file's constants, not input.
    insert = (
        f"INSERT INTO {table}(rowid, scope, embedding) VALUES (?, ?, {value})"  # noqa: S608
        if partitioned
        else f"INSERT INTO {table}(rowid, embedding) VALUES (?, {value})"  # noqa: S608
    )
    for start in range(0, rows, 5000):
        vectors = unit_vectors(rng, min(5000, rows - start))
        db.executemany(
            insert,
            (
                (start + i + 1, (start + i) % partitions, v.tobytes())
                if partitioned
                else (start + i + 1, v.tobytes())
                for i, v in enumerate(vectors)
            ),
        )
    db.commit()
    fill = time.perf_counter() - started
    where = "embedding MATCH " + value + " AND k = ?" + (" AND scope = 3" if partitioned else "")
    query = f"SELECT rowid, distance FROM {table} WHERE {where} ORDER BY distance"  # noqa: S608
    times, cpu = [], []
    for vector in unit_vectors(rng, QUERIES + 3):
        started, started_cpu = time.perf_counter(), time.process_time()
        found = db.execute(query, (vector.tobytes(), K)).fetchall()
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
        assert len(found) == K
    times, cpu = times[3:], cpu[3:]  # the first queries read the pages in
    return {
        "layout": name,
        "rows": rows,
        "rows_searched": rows // partitions,
        "fill_rows_per_s": round(rows / fill),
        "knn_p50_ms": round(statistics.median(times) * 1000, 2),
        "knn_p90_ms": round(statistics.quantiles(times, n=10)[-1] * 1000, 2),
        # CPU time of this process: what an idle core would take (the machine is shared).
        "knn_cpu_p50_ms": round(statistics.median(cpu) * 1000, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    args = parser.parse_args()
    rng = np.random.default_rng(16)
    with tempfile.TemporaryDirectory(prefix="pc-vector-knn-") as scratch:
        db = sqlean.connect(Path(scratch) / "knn.sqlite3")
        load_sqlite_vec(db)
        db.execute("PRAGMA journal_mode=WAL")
        print(
            json.dumps(
                {
                    "sqlite": sqlean.sqlite_version,
                    "vec": db.execute("SELECT vec_version()").fetchone()[0],
                }
            )
        )
        for rows in args.rows:
            for name in args.layouts:
                print(json.dumps(measure(db, name, rows, rng)), flush=True)
        db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
