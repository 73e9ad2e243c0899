"""The load test's small configuration (``bench/load.py --ci``: 2 client processes for
10 s against a served process holding 2,000 entries), on the suite's engine. The full
configuration is ``bench/load.py --full`` (docs/RELIABILITY.md)."""

import pytest

from tests.reliability.conftest import run_bench


@pytest.mark.slow
def test_mixed_load_gets_no_errors_and_loses_no_write(tmp_path):
    result = run_bench("load.py", tmp_path)
    report = result["report"]
    assert result["returncode"] == 0, report
    operations = result["operations"]
    for op in ("prepare", "remember", "search"):
        assert operations[op]["ok"] > 0, (op, report)
    total = operations["total"]
    assert (total["5xx"], total["other_non_200"], total["unanswered"]) == (0, 0, 0), report
    assert operations["prepare"]["outcomes"].get("ready", 0) > 0, report
    writes = result["writes"]
    # Every acknowledged remember is listed exactly once, with its id, version and text.
    assert writes["ok"], writes["problems"]
    assert (writes["lost"], writes["duplicated"], writes["mismatched"]) == (0, 0, 0)
    assert writes["acknowledged"] == operations["remember"]["ok"]
    assert writes["listed"] == result["seeding"]["seeded"] + writes["acknowledged"]
    assert result["integrity"]["ok"], result["integrity"]["output"]
    assert result["server_peak_rss_kib"] > 0
