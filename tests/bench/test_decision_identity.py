"""bench/decision_identity.py: two dumps of the same tree in one home are the same, and
the comparison finds a changed verdict or pack."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.decision_identity import compare
from tests.bench.runner import REPO_ROOT, run_bench
from tests.bench.test_restraint import tiny_dev_data
from tests.conftest import sqlite_only


def test_the_comparison_counts_packs_and_considered_lists_that_differ():
    candidate = ["mem_ent_1", "near in meaning", 0.5, 0.9, 0.6, None]
    before = {"a#0": ["pack", [candidate]], "a#1": ["", []]}
    assert compare(before, before)[1] == 0
    changed = {"a#0": ["pack", [[*candidate[:1], "far", *candidate[2:]]]], "a#1": ["", []]}
    lines, differing = compare(before, changed)
    assert differing == 1
    assert lines[-1] == "2 prompts: packs differ 0, considered lists differ 1"
    assert "a#0: first difference" in lines[0]
    lines, differing = compare(before, {"a#0": before["a#0"]})
    assert differing == 1
    assert lines[0] == "a#1: only in before"


@pytest.mark.slow
@sqlite_only("the dump measures the SQLite deployment; it runs in the SQLite pass")
def test_two_dumps_of_one_tree_in_one_home_are_the_same(tmp_path):
    files, locomo = tiny_dev_data(tmp_path)
    home = tmp_path / "home"
    dumps = []
    for name in ("first.json", "second.json"):
        out = tmp_path / name
        run_bench(
            "decision_identity.py",
            *("--files", str(files), "--locomo", str(locomo), "--home", str(home)),
            *("--out", str(out)),
        )
        dumps.append(out)
    found = json.loads(dumps[0].read_text(encoding="utf-8"))
    assert any(pack for pack, _ in found.values())  # the tiny data's answers are packed
    same = _compare(*dumps)
    assert same.returncode == 0, same.stdout
    # A verdict changed: found, and the exit status says so.
    key = next(key for key, (_, considered) in found.items() if considered)
    found[key][1][0][1] = "far"
    dumps[1].write_text(json.dumps(found), encoding="utf-8")
    changed = _compare(*dumps)
    assert changed.returncode == 1
    assert "considered lists differ 1" in changed.stdout


def _compare(before: Path, after: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "bench/decision_identity.py", "--compare", str(before), str(after)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
