"""Issue 27, item 4: one request's work is bounded at the largest input each route takes.

``bench/request_cost.py --ci`` on the suite's engine, with the embedding model off (what
is left is the Python work, and the database's): a real ``manage.py serve`` with 300
memories, every route sent its worst input three times (a prompt of 4,096 one-letter
lines, 8,192 characters of distinct words or of CJK, a 200,000-character capture, a list
page of 1 MiB, the MCP tools). The server's CPU time per request is read from /proc, so
the figure does not grow with what else the shared machine runs. Before the fix the
prompt of one-letter lines cost 0.6 s of CPU (segments joined by a quadratic scan);
now 27 ms. The budgets are loose bounds, not the figures (docs/RELIABILITY.md has
those): they catch a quadratic step, not a slower machine."""

import pytest

from tests.reliability.conftest import run_bench

# Server CPU per request, model off. Measured after the fix: 10-110 ms, CJK the dearest.
LINES_BUDGET_MS = 200
ANY_BUDGET_MS = 400


@pytest.mark.slow
def test_no_request_costs_more_than_a_bounded_amount_at_its_largest_input(tmp_path):
    result = run_bench("request_cost.py", tmp_path, timeout=600)
    report = result["report"]
    assert result["embeddings"] == "off", report
    assert not result["failed"], report
    cases = {case["case"]: case for case in result["cases"]}
    assert cases["prepare: 4,096 one-letter lines"]["cpu_ms"] <= LINES_BUDGET_MS, report
    for name, case in cases.items():
        assert case["cpu_ms"] <= ANY_BUDGET_MS, (name, report)
