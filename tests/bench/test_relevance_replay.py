"""bench/relevance_replay.py: the in-process replay of the restraint figures, end to end on
the tiny synthetic data of test_restraint.py, and its threshold overrides."""

import tempfile
from pathlib import Path

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
    for wrong in ("ADMITTED=1", "Verdict=1", "readable=1", "NO_SUCH_NUMBER=1", "WORD_COVERAGE=a"):
        with pytest.raises(SystemExit):
            overrides([wrong])


def replay(tmp_path, *options):
    """The replay's stdout on the tiny dev data, its scopes kept in ``tmp_path`` (a second
    replay reads them)."""
    files, locomo = tiny_dev_data(Path(tempfile.mkdtemp(dir=tmp_path)))
    args = ["--files", str(files), "--locomo", str(locomo), "--pairs", "1:2,2:1"]
    return run_bench("relevance_replay.py", *args, "--home", str(tmp_path / "home"), *options)


def figures_of(out):
    """{figure: as printed} of a single run's stdout."""
    return dict(line.split(": ", 1) for line in out.splitlines() if not line.startswith("#"))


@pytest.mark.slow
@sqlite_only("the replay measures the SQLite deployment; it runs in the SQLite pass")
def test_the_replay_prints_every_figure_with_a_threshold_overridden(tmp_path):
    out = replay(tmp_path, "--set", "WORD_COVERAGE=0.5")
    assert "# WORD_COVERAGE = 0.5" in out
    figures = figures_of(out)
    # Every answerable prompt of the tiny project shares its key words with its entry.
    assert figures["coding recall_any"] == "100.0 %"
    for name in ("LoCoMo bare any", "cross-conversation empty", "planted boilerplate reach"):
        assert name in figures
    assert figures["follow-ups with a pack"].endswith(" %")
    # A second run in the same home reads the kept scopes: the same figures.
    again = replay(tmp_path, "--set", "WORD_COVERAGE=0.5")
    assert again.splitlines()[2:] == out.splitlines()[2:]
    # The measured cap: no pack holds more than it allows without an anchor.
    capped = replay(tmp_path, "--cap-unanchored", "0")
    assert "# at most 0 admitted without an anchor" in capped
    items = figures_of(capped)
    assert float(items["coding items per pack"]) < float(figures["coding items per pack"])


@pytest.mark.slow
@sqlite_only("the replay measures the SQLite deployment; it runs in the SQLite pass")
def test_a_sweep_prints_a_row_for_each_value_as_a_single_run_would(tmp_path):
    figures = figures_of(replay(tmp_path, "--set", "WORD_COVERAGE=1.5"))
    out = replay(tmp_path, "--sweep", "WORD_COVERAGE=0.45,1.5")
    table = [line for line in out.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    rows = {
        cells[0]: dict(zip(header[1:], cells[1:], strict=True))
        for cells in ([cell.strip() for cell in line.strip("|").split("|")] for line in table[2:])
    }
    assert header[0] == "WORD_COVERAGE"
    assert list(rows) == ["0.45", "1.5"]
    assert rows["1.5"] == figures
    # No share of a segment's words reaches 1.5: the planted notes found by their words
    # alone are left out, so each row was replayed with its own value.
    key = "planted common-words reach"
    assert int(rows["1.5"][key]) < int(rows["0.45"][key])


@sqlite_only("the replay measures the SQLite deployment; it runs in the SQLite pass")
def test_a_sweep_names_a_number_of_the_relevance_decision(tmp_path):
    with pytest.raises(AssertionError, match="--sweep Verdict=1: Verdict is not a number"):
        replay(tmp_path, "--sweep", "Verdict=1,2")
