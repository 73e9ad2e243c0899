"""Issue 27, item 3: what anyone may GET costs the same however much the hooks captured.

``bench/anonymous_routes.py --ci`` on the suite's engine: 300 captured prompts of
200,000 characters, a real ``manage.py serve``, every route that answers without a token
or a session GET as a page in the user's browser could make it (a no-cors GET), then 4
clients GET ``/`` for 6 s. Before the fix ``/`` read and decoded the newest 2,000
payloads on every visit: 148 ms of server CPU a page here, and the server grew from 159
to 414 MiB. Costs are the server's CPU time per request, not latencies: the machine is
shared, and CPU time does not grow with what else it runs."""

import pytest

from tests.reliability.conftest import run_bench

# Server CPU per request; every route measured 2-10 ms after the fix.
CPU_BUDGET_MS = 50


@pytest.mark.slow
def test_anonymous_routes_cost_a_constant_with_a_large_journal(tmp_path):
    result = run_bench("anonymous_routes.py", tmp_path)
    report = result["report"]
    assert result["prompts"] == 300, report
    routes = {route["path"]: route for route in result["routes"]}
    assert not result["wrong_status"], report
    for path, route in routes.items():
        assert route["cpu_ms"] <= CPU_BUDGET_MS, (path, report)
    flood = result["flood"]
    assert flood["pages"] > 0, report
    assert not flood["failures"], report
    # Decoding the payloads held hundreds of MiB; counting from an index holds nothing.
    assert flood["peak_mib"] - flood["rss_idle_mib"] < 50, report
    assert result["passed"], report
