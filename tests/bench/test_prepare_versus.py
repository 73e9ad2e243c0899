"""bench/prepare_versus.py runs in CI with this checkout on both sides, on a tiny project
made here (the development data is not in the repository): only that both servers answer
every kind of prompt and the one table is printed is checked, its figures being
measurements."""

import json
import re

import pytest

from tests.bench.runner import run_bench
from tests.conftest import sqlite_only

WRAPPED = "Please check the notes first.\nWhich VPN profile does staging use?\nThen run the tests."
PROJECT = {
    "project": "tiny",
    "entries": [
        {"id": "e1", "kind": "command", "text": "Run the test suite with `make test`."},
        {"id": "e2", "kind": "gotcha", "text": "The staging VPN profile is named orca."},
    ],
    "prompts": [
        {"id": "p1", "prompt": "How do I run the tests?", "relevant": ["e1"], "type": "direct"},
        {"id": "p2", "prompt": WRAPPED, "relevant": ["e2"], "type": "boilerplate"},
        {"id": "p3", "prompt": WRAPPED.upper(), "relevant": ["e2"], "type": "boilerplate"},
    ],
}


@pytest.mark.slow
@sqlite_only("the benchmark serves the SQLite deployment; it runs in the SQLite pass")
def test_prepare_versus_ci_configuration_prints_each_kind_with_a_ratio(tmp_path):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(PROJECT), encoding="utf-8")
    out = run_bench("prepare_versus.py", "--files", str(data))
    assert "2 server(s) each" in out
    assert "| prompts | n | this checkout again | this checkout | ratio |" in out
    for row in ("| short | 1 |", "| wrapped | 2 |", "| wrapped 8 KB | 2 |"):
        assert row in out
    # A ratio and the two spreads on every row.
    assert len(re.findall(r"\| [0-9.]+x \| [0-9.]+x / [0-9.]+x \|", out)) == 3


@pytest.mark.parametrize("servers", [1, 2, 4, 5])
def test_every_server_answers_each_prompt_once_and_goes_first_as_often(servers):
    from bench.prepare_versus import rotation

    orders = [rotation(servers, at) for at in range(2 * servers)]
    assert all(sorted(order) == list(range(servers)) for order in orders)
    firsts = [order[0] for order in orders]
    assert all(firsts.count(server) == 2 for server in range(servers))
    # And each server follows each other one as often as it precedes it.
    pairs = [(order[at], order[at + 1]) for order in orders for at in range(servers - 1)]
    for one in range(servers):
        for other in range(one + 1, servers):
            assert pairs.count((one, other)) == pairs.count((other, one))


def test_a_before_python_that_is_not_there_stops_it_rather_than_serving_with_another(tmp_path):
    from bench import prepare_versus

    missing = tmp_path / "no-venv" / "python"
    with pytest.raises(SystemExit, match="no such file"):
        prepare_versus.main(["--files", str(tmp_path / "*.json"), "--before-python", str(missing)])
