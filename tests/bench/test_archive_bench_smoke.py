"""The archive benchmark's small configuration runs in CI, so it cannot rot. Its exit
status checks the round trip and the refusals; its figures are measurements."""

import pytest

from tests.bench.runner import run_bench
from tests.conftest import sqlite_only


@pytest.mark.slow
@sqlite_only("the CI configuration measures SQLite; it runs in the SQLite pass")
def test_archive_bench_ci_configuration_completes_and_prints_the_table(tmp_path):
    table = run_bench("archive_bench.py", "--data-dir", str(tmp_path / "data"))
    for step in ("| export", "baseline: check_integrity (source)", "| import (all phases)"):
        assert step in table, step
    assert "the re-export's records are byte-identical" in table
    assert "refused naming their line: 21/21" in table
