"""bench/relevance_replay.py: the in-process replay of the restraint figures, end to end on
the tiny synthetic data of test_restraint.py, and its threshold overrides."""

import pytest

from bench.relevance_replay import overrides
from tests.bench.runner import run_bench
from tests.bench.test_restraint import tiny_dev_data
from tests.conftest import sqlite_only


def test_overrides_take_numbers_of_the_relevance_decision_only():
    assert overrides(["WORD_COVERAGE=0.3", "WORD_LIST_HELD=9"]) == {
        "WORD_COVERAGE": 0.3,
        "WORD_LIST_HELD": 9,
    }
    for wrong in ("ADMITTED=1", "Verdict=1", "readable=1", "NO_SUCH_NUMBER=1"):
        with pytest.raises(SystemExit):
            overrides([wrong])


@pytest.mark.slow
@sqlite_only("the replay measures the SQLite deployment; it runs in the SQLite pass")
def test_the_replay_prints_every_figure_with_a_threshold_overridden(tmp_path):
    files, locomo = tiny_dev_data(tmp_path)
    args = ["--files", str(files), "--locomo", str(locomo), "--pairs", "1:2,2:1"]
    home = str(tmp_path / "home")
    out = run_bench("relevance_replay.py", *args, "--home", home, "--set", "WORD_COVERAGE=0.5")
    assert "# WORD_COVERAGE = 0.5" in out
    figures = dict(line.split(": ", 1) for line in out.splitlines() if not line.startswith("#"))
    # Every answerable prompt of the tiny project shares its key words with its entry.
    assert figures["coding recall_any"] == "100.0 %"
    for name in ("LoCoMo bare any", "cross-conversation empty", "planted boilerplate reach"):
        assert name in figures
    # A second run in the same home reads the kept scopes: the same figures.
    again = run_bench("relevance_replay.py", *args, "--home", home, "--set", "WORD_COVERAGE=0.5")
    assert again.splitlines()[2:] == out.splitlines()[2:]
    # The measured cap: no pack holds more than it allows without an anchor.
    capped = run_bench("relevance_replay.py", *args, "--home", home, "--cap-unanchored", "0")
    assert "# at most 0 admitted without an anchor" in capped
    items = dict(line.split(": ", 1) for line in capped.splitlines() if not line.startswith("#"))
    assert float(items["coding items per pack"]) < float(figures["coding items per pack"])
