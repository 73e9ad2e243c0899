"""bench/prepare_bench.py's small configuration runs in CI, so it cannot rot. Only that it
completes and prints its table is checked: its figures are measurements, not targets."""

import pytest

from tests.bench.runner import run_bench
from tests.conftest import sqlite_only


@pytest.mark.slow
@sqlite_only("the benchmark measures the SQLite deployment; it runs in the SQLite pass")
def test_prepare_bench_ci_configuration_completes_and_prints_the_table(tmp_path):
    out = run_bench("prepare_bench.py", "--data-dir", str(tmp_path / "data"))
    assert "| measure | prepare (HTTP) | raw FTS5 | difference | target |" in out
    assert "| p50 ms |" in out
    assert "| p99 ms |" in out
    assert "2,000 entries seeded" in out
