"""bench/locomo.py's small configuration (one conversation, bare + one template) runs in
CI, so it cannot rot. Only that it completes and prints its table is checked: its figures
are measurements, not targets."""

import json
from pathlib import Path

import pytest

from tests.bench.runner import run_bench
from tests.conftest import sqlite_only

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = REPO_ROOT.parent / "shared" / "data" / "locomo-dev"
TEMPLATES = REPO_ROOT / "bench" / "prompts" / "locomo_templates.json"


def test_committed_templates_wrap_one_question_in_300_to_1500_bytes():
    templates = json.loads(TEMPLATES.read_text(encoding="utf-8"))["templates"]
    assert len(templates) >= 5
    assert len({item["name"] for item in templates}) == len(templates)
    for item in templates:
        assert item["template"].count("{question}") == 1, item["name"]
        around = len(item["template"].replace("{question}", "").encode())
        assert 300 <= around <= 1500, item["name"]


@pytest.mark.slow
@sqlite_only("the benchmark measures the SQLite deployment; it runs in the SQLite pass")
@pytest.mark.skipif(not DATA.is_dir(), reason="the LoCoMo development split is not present")
def test_locomo_ci_configuration_completes_and_prints_the_table(tmp_path):
    out = run_bench("locomo.py", "--home", str(tmp_path / "home"))
    assert "| policy | prompt | questions | cites all | cites any |" in out
    for policy in ("tuned, cold (HTTP)", "tuned, prompts captured (HTTP)", "naive (in-process)"):
        assert f"| {policy} | bare |" in out
        assert out.count(f"| {policy} |") == 2
