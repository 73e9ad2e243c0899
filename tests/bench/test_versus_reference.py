"""bench/versus_reference.py runs in CI against bench/reference_stand_in.py (a small
stdlib server speaking the reference's five operations), never the real reference: only
that both servers are driven through the whole workload and the one table is printed is
checked, its figures being measurements."""

import pytest

from tests.bench.runner import run_bench
from tests.conftest import sqlite_only


@pytest.mark.slow
@sqlite_only("the benchmark starts the SQLite deployment; it runs in the SQLite pass")
def test_versus_reference_ci_configuration_prints_one_table_with_ratios():
    out = run_bench("versus_reference.py")
    assert "(CI: against the stand-in, not the reference)" in out
    assert "| p50 ms | reference 1.4.1 | this server | ratio | this server above its floor |" in out
    for row in (
        "| remember 1-100 |",
        "| remember last 100 |",
        "| prepare |",
        "| prepare (p95) |",
        "| search |",
        "| floor: GET /health/live |",
        "| floor: prepare, empty scope |",
        "| server RSS at the end (MB) |",
        "| server RSS 2 s later (MB) |",
    ):
        assert row in out
    assert out.count("x |") >= 8  # a ratio on every row
