"""bench/redaction_bench.py's small configuration runs in CI, so it cannot rot. Only that
it completes and prints its table is checked: its figures are measurements."""

import pytest

from tests.bench.runner import run_bench
from tests.conftest import sqlite_only


@pytest.mark.slow
@sqlite_only("the benchmark measures the SQLite deployment; it runs in the SQLite pass")
def test_redaction_bench_ci_configuration_completes_and_prints_the_table():
    out = run_bench("redaction_bench.py")
    assert "| route | input | off p50 | on p50 | added p50 | off p95 | on p95 |" in out
    for route in ("| capture | prose |", "| prepare | dense |", "| remember | prose |"):
        assert route in out
    assert "(192 secrets found)" in out
