"""bench/prepare_bench.py's small configuration runs in CI, so it cannot rot. Only that it
completes and prints its table is checked: its figures are measurements, not targets."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import sqlite_only

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@sqlite_only("the benchmark measures the SQLite deployment; it runs in the SQLite pass")
def test_prepare_bench_ci_configuration_completes_and_prints_the_table(tmp_path):
    completed = subprocess.run(
        [sys.executable, "bench/prepare_bench.py", "--ci", "--data-dir", str(tmp_path / "data")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    out = completed.stdout
    assert "| measure | prepare (HTTP) | raw FTS5 | difference | target |" in out
    assert "| p50 ms |" in out
    assert "| p99 ms |" in out
    assert "2,000 entries seeded" in out
