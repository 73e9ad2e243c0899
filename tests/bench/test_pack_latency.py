"""bench/pack_latency.py: prepare latency on real scopes, end to end on the tiny synthetic
project of test_restraint.py."""

import pytest

from tests.bench.runner import run_bench
from tests.bench.test_restraint import tiny_dev_data
from tests.conftest import sqlite_only


@pytest.mark.slow
@sqlite_only("the bench measures the SQLite deployment; it runs in the SQLite pass")
def test_the_bench_times_prepare_warm_and_cold(tmp_path):
    files, _ = tiny_dev_data(tmp_path)
    out = run_bench("pack_latency.py", "--files", str(files))
    lines = [line for line in out.splitlines() if not line.startswith("#")]
    assert [line.split(":")[0] for line in lines] == [
        "prepare, warm",
        "prepare, prompt cold",
        "prepare, prompt and token states cold",
    ]
    assert all(" ms, p95 " in line for line in lines)
