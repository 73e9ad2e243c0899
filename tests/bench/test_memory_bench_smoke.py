"""The benchmark's small configuration runs in CI, so it cannot rot. Only that it
completes and prints its table is checked: its figures are measurements, not targets."""

import pytest

from tests.bench.runner import run_bench
from tests.conftest import sqlite_only


@pytest.mark.slow
@sqlite_only("the benchmark measures the SQLite deployment; it runs in the SQLite pass")
def test_memory_bench_ci_configuration_completes_and_prints_the_table(tmp_path):
    table = run_bench("memory_bench.py", "--data-dir", str(tmp_path / "data"))
    assert "| measure" in table
    for measure in (
        "seeding",
        "remember large / small",
        "search median: HTTP / raw FTS5",
        "search p99: HTTP / raw FTS5",
        "rebuild_index @ 600, up to date",
        "rebuild_index @ 600, projection wiped",
        "peak RSS",
        "check_integrity @ 600",
    ):
        assert measure in table, measure
    # Same query, same database: the served search and the raw FTS5 statement agree.
    assert "0 result mismatches vs raw" in table
    assert "via services" in table
