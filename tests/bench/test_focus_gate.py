"""bench/focus_gate.py: the late-interaction rule it measures (pure), and the bench end to
end on the tiny synthetic data of test_restraint.py."""

import numpy as np
import pytest

from bench.focus_gate import Asked, kept, matches
from tests.bench.runner import run_bench
from tests.bench.test_restraint import tiny_dev_data
from tests.conftest import sqlite_only

UNIT = {
    "deploy": np.array([[1.0, 0.0, 0.0]]),
    "release": np.array([[0.8, 0.6, 0.0]]),
    "cats": np.array([[0.0, 0.0, 1.0]]),
}


def vectors(text):
    return np.vstack([UNIT[word] for word in text.split()])


def test_matches_are_each_segment_tokens_best_cosines():
    # "deploy cats" against "release": deploy 0.8, cats 0.0; "cats" alone 0.0.
    found = matches(vectors, ["deploy cats", "cats"], "release")
    assert [list(tokens) for tokens in found] == [pytest.approx([0.8, 0.0]), [0.0]]


def _asked(admitted, pack):
    texts = {key: key for key, _ in admitted}
    return Asked("coding", ["q"], admitted, texts, [], pack)


def test_the_bench_runs_the_decisions_rule_and_the_next_candidates_take_the_places():
    admitted = [("a", "WORDS"), ("b", "MEANING"), ("c", "ANCHORED"), ("d", "WORDS")]
    # One segment of two tokens (focus is their mean): b is 0.3 under the best and says
    # nothing a better candidate does not, c holds an anchor, d is near the best.
    focused = {
        "a": [np.array([0.7, 0.7])],
        "b": [np.array([0.4, 0.4])],
        "c": [np.array([0.3, 0.3])],
        "d": [np.array([0.65, 0.65])],
    }
    asked = _asked(admitted, pack=["a", "b", "c"])
    assert kept(asked, focused, 0.1) == ["a", "c", "d"]
    assert kept(asked, focused, 0.5) == ["a", "b", "c", "d"]
    assert kept(asked, focused, None) == ["a", "b", "c", "d"]
    # The shipped spread is back after each run.
    from powercontext.search.relevance import numbers

    assert numbers.FOCUS_SPREAD == 0.12


def test_an_empty_pack_stays_empty():
    assert kept(_asked([("a", "WORDS")], pack=[]), {"a": [np.array([0.9])]}, 0.1) == []


@pytest.mark.slow
@sqlite_only("the bench measures the SQLite deployment; it runs in the SQLite pass")
def test_the_bench_prints_both_forms_for_each_spread(tmp_path):
    files, locomo = tiny_dev_data(tmp_path)
    out = run_bench(
        "focus_gate.py",
        *("--files", str(files), "--locomo", str(locomo), "--pairs", "1:2,2:1"),
        *("--home", str(tmp_path / "home"), "--spreads", "0.1,0.3"),
    )
    rows = [line.split(" | ") for line in out.splitlines() if not line.startswith("#")]
    assert rows[0][:3] == ["form", "D", "coding precision"]
    assert [row[:2] for row in rows[1:]] == [
        ["shipped", "-"],
        *(["states", spread] for spread in ("without", "0.1", "0.3")),
        *(["table", spread] for spread in ("without", "0.1", "0.3")),
    ]
    # Every answerable prompt of the tiny project shares its key words with its entry, and
    # leaving unanchored candidates out never costs it its answer here.
    assert all(float(row[3]) == 100.0 for row in rows[1:])
    assert "candidates scored" in out
