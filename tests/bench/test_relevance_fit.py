"""bench/relevance_fit.py: the decision's figures per project beside search@8's, and a
number chosen leave-one-project-out, end to end on two tiny synthetic projects."""

import json
import tempfile
from pathlib import Path

import pytest

from bench.relevance_fit import Asked, coding_figures, held_out, objective
from tests.bench.runner import run_bench
from tests.bench.test_restraint import PROJECT, tiny_dev_data
from tests.conftest import sqlite_only


def asked(project, value_good):
    """A project's two prompts: the answer packed when ``value_good``."""
    pack = ("e1",) if value_good else ()
    return [
        Asked(project, "direct", frozenset({"e1"}), pack, ("e1",)),
        Asked(project, "no-answer", frozenset(), (), ()),
    ]


def test_each_project_left_out_is_scored_at_the_value_chosen_on_the_others(capsys):
    # 0.1 is better on a and b, 0.2 only on c: with c left out, 0.1 is chosen (and scored
    # on c, where it loses); with a or b left out the others tie and the shipped one stays.
    runs = {
        0.1: [*asked("a", True), *asked("b", True), *asked("c", False)],
        0.2: [*asked("a", False), *asked("b", False), *asked("c", True)],
    }
    folds = held_out(runs, 0.2, lambda a: a.project, coding_figures, objective, "left out")
    assert [fold["chosen"] for fold in folds.values()] == [0.2, 0.2, 0.1]
    assert folds["c"]["at chosen"]["recall_any"] == 0.0
    assert folds["c"]["at shipped"]["recall_any"] == 100.0
    table = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()[2:] if line}
    assert set(rows) == {"a", "b", "c", "mean", "worst"}
    # The worst held out is c scored at 0.1: its answer lost.
    worst = [cell.strip() for cell in rows["worst"].strip("|").split("|")]
    assert worst[2] == "0.0"  # recall_any


def test_figures_count_search_and_pack_over_answerable_prompts_only():
    figures = coding_figures([*asked("a", True), *asked("b", False)])
    assert figures["recall_any"] == 50.0
    assert figures["search@8"] == 100.0
    assert figures["no-answer empty"] == 100.0
    assert figures["precision"] == 100.0


@pytest.mark.slow
@sqlite_only("the replay measures the SQLite deployment; it runs in the SQLite pass")
def test_the_fit_prints_the_held_out_table_of_a_number_it_chooses(tmp_path):
    data = Path(tempfile.mkdtemp(dir=tmp_path))
    _, locomo = tiny_dev_data(data)
    (data / "tiny2.json").write_text(json.dumps({**PROJECT, "project": "tiny2"}))
    args = ["--files", str(data / "*.json"), "--locomo", str(locomo), "--pairs", "1:2,2:1"]
    out = run_bench(
        "relevance_fit.py", *args, "--home", str(tmp_path / "home"), "--choose", "WORD_COVERAGE=1.5"
    )
    assert "# WORD_COVERAGE: shipped 0.45" in out
    lines = out.splitlines()
    held = lines[lines.index(next(line for line in lines if "project left out" in line)) :]
    names = [line.split("|")[1].strip() for line in held[2:] if line.startswith("|")]
    assert names[:4] == ["tiny", "tiny2", "mean", "worst"]
    assert "conversation left out" in out


def test_changes_list_each_outcome_a_value_moves_and_nothing_else():
    from bench.relevance_fit import Questioned, changes

    mac = "on my MacBook it fails"
    shipped = [
        Asked("a", "paraphrase", frozenset({"e1"}), (), (), prompt=mac),
        Asked("a", "direct", frozenset({"e2"}), ("e2",), (), prompt="unchanged"),
    ]
    tried = [
        Asked("a", "paraphrase", frozenset({"e1"}), ("e1", "e9"), (), prompt=mac),
        Asked("a", "direct", frozenset({"e2"}), ("e2",), (), prompt="unchanged"),
    ]
    assert changes({0: shipped, 1: tried}, 0, 1) == [
        "a paraphrase 'on my MacBook it fails': [] -> [e1* e9]"
    ]
    talks = {
        0: [Questioned("26", cross_empty=True, question="What did Joanna paint?")],
        1: [Questioned("26", cross_empty=False, question="What did Joanna paint?")],
    }
    assert changes(talks, 0, 1) == ["26 'What did Joanna paint?': cross_empty True -> False"]
    assert changes(talks, 0, 0) == []
