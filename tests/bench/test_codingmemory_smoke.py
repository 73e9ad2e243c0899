"""bench/codingmemory.py runs in CI on a tiny synthetic project made here, so it cannot
rot without the development data. That it completes, prints its table and scores the
synthetic prompts the way they are built is checked: on real data its figures are
measurements, not targets."""

import json

import pytest

from tests.bench.runner import run_bench
from tests.conftest import sqlite_only

PROJECT = {
    "project": "tiny",
    "entries": [
        {"id": "e1", "kind": "command", "text": "Run the test suite with `make test`."},
        {"id": "e2", "kind": "gotcha", "text": "The staging VPN profile is named orca."},
        {"id": "e3", "kind": "fact", "text": "Invoices are numbered per fiscal year."},
        {"id": "e4", "kind": "fact", "text": "Invoices are numbered per fiscal year."},
    ],
    "prompts": [
        {"id": "p1", "prompt": "How do I run the tests?", "relevant": ["e1"], "type": "direct"},
        {
            "id": "p2",
            "prompt": "Please check the notes first.\nWhich VPN profile does staging use?",
            "relevant": ["e2"],
            "type": "boilerplate",
        },
        {"id": "p3", "prompt": "How are invoices numbered?", "relevant": ["e4"], "type": "direct"},
        {"id": "p4", "prompt": "Who designed the logo?", "relevant": [], "type": "no-answer"},
    ],
}


@pytest.mark.slow
@sqlite_only("the benchmark measures the SQLite deployment; it runs in the SQLite pass")
def test_codingmemory_ci_configuration_completes_and_scores_the_synthetic_project(tmp_path):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(PROJECT), encoding="utf-8")
    out_json = tmp_path / "report.json"
    out = run_bench("codingmemory.py", "--files", str(data), "--json-out", str(out_json))
    assert "| pass | prompts | answerable | pack recall@8 |" in out
    report = json.loads(out_json.read_text())
    for name in ("cold", "captured"):
        assert f"SUMMARY {name}:" in out
        overall = report[name]["overall"]
        # The duplicate entry maps to the first: every answerable prompt finds its entry.
        assert overall["answerable"] == 3
        assert overall["pack_recall_pct"] == 100.0
        assert overall["search_recall_pct"] == 100.0
        assert report[name]["no-answer"]["no_answer"] == 1
