"""bench/locomo.py's small configuration (one conversation, bare + one template) runs in
CI, so it cannot rot: on a small conversation written here in the LoCoMo format (the dev
split is not part of the repository). Only that it completes and prints its table is
checked: its figures are measurements, not targets."""

import json
from pathlib import Path

import pytest

from tests.bench.runner import run_bench
from tests.bench.test_restraint import conversation
from tests.conftest import sqlite_only

REPO_ROOT = Path(__file__).resolve().parents[2]
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
def test_locomo_ci_configuration_completes_and_prints_the_table(tmp_path):
    data = tmp_path / "locomo"
    data.mkdir()
    chat = conversation(
        "Ann",
        [
            "I adopted a cat named Miso last spring.",
            "My bakery in Lyon opens at six every morning.",
            "We went hiking in the Alps in July.",
            "My sister Lea teaches piano in Geneva.",
        ],
        [
            ("What is Ann's cat called?", 1),
            ("Where is Ann's bakery?", 2),
            ("When did Ann go hiking?", 3),
            ("What does Ann's sister teach?", 4),
        ],
    )
    (data / "7.json").write_text(json.dumps(chat), encoding="utf-8")
    rows = tmp_path / "rows.json"
    out = run_bench(
        "locomo.py",
        "--data",
        str(data),
        "--conversations",
        "7",
        "--home",
        str(tmp_path / "home"),
        "--json-out",
        str(rows),
    )
    assert "| policy | prompt | questions | cites all | cites any |" in out
    for policy in ("tuned, cold (HTTP)", "tuned, prompts captured (HTTP)", "naive (in-process)"):
        assert f"| {policy} | bare |" in out
        assert out.count(f"| {policy} |") == 2
    # Each conversation's captured rows (one conversation here: the same as the total).
    written = json.loads(rows.read_text(encoding="utf-8"))
    captured = [row for row in written if row["policy"] == "tuned, prompts captured (HTTP)"]
    total = {row["prompt"]: row for row in captured if "conversation" not in row}
    mine = {row["prompt"]: row for row in captured if row.get("conversation") == "7"}
    assert set(mine) == set(total)
    assert len(mine) == 2
    for prompt, row in mine.items():
        assert row["questions"] == total[prompt]["questions"] == 4
        assert row["any_pct"] == total[prompt]["any_pct"]
