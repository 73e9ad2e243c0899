"""The shipped numbers of the relevance decision are pinned to the record
``bench/relevance_fit.py --record`` writes from the development data
(``bench/relevance_numbers.json``): a number changed by hand, or a refit whose verdict
moved, fails here until the record and the code agree."""

import copy
import hashlib
import json

import pytest

from bench.relevance_record import decision_numbers, read, ships
from tests.bench.runner import run_bench
from tests.bench.test_restraint import PROJECT, tiny_dev_data
from tests.conftest import sqlite_only


def test_every_number_of_the_decision_is_in_the_record_at_the_value_the_code_ships():
    record = read()["numbers"]
    shipped = decision_numbers()
    assert set(record) == set(shipped)
    for name, value in shipped.items():
        assert record[name]["shipped"] == value, name
        assert value in record[name]["grid"], name


def test_the_method_ships_each_number_the_code_ships_or_the_record_says_why_not():
    shipped = decision_numbers()
    for name, entry in read()["numbers"].items():
        if ships(entry) == shipped[name]:
            assert "kept" not in entry, name  # no reason left over from an older fit
        else:
            assert len(entry.get("kept", "")) > 40, f"{name}: the method ships {ships(entry)}"


def test_the_record_was_fitted_on_every_project_and_conversation_of_its_data():
    record = read()
    coding = sorted(p.split("/")[1][: -len(".json")] for p in record["data"] if "coding" in p)
    conversations = sorted(
        p.split("/")[1][: -len(".json")] for p in record["data"] if "locomo" in p
    )
    assert len(coding) == 7
    assert len(conversations) == 5
    assert all(len(digest) == 64 for digest in record["data"].values())
    for name, entry in record["numbers"].items():
        assert sorted(entry["projects"]) == coding, name
        assert sorted(entry["conversations"]) == conversations, name
        assert all(fold["chosen"] in entry["grid"] for fold in entry["projects"].values()), name
        for by_value in entry["conversations"].values():
            assert sorted(map(float, by_value)) == sorted(map(float, entry["grid"])), name


def _figures(recall, precision=50.0, empty=40.0):
    return {"recall_any": recall, "precision": precision, "no-answer empty": empty}


def _entry(chosen=(0.2, 0.2, 0.2), held=(90.0, 90.0, 90.0), conversation=(150.0, 150.0)):
    """Three projects whose folds chose ``chosen`` and found ``held`` answers at it (90 at
    the shipped 0.1), one conversation scoring ``conversation`` at 0.1 and 0.2."""
    return {
        "grid": [0.1, 0.2],
        "shipped": 0.1,
        "projects": {
            project: {
                "chosen": value,
                "at chosen": _figures(recall, precision=52.0 if value == 0.2 else 50.0),
                "at shipped": _figures(90.0),
            }
            for project, value, recall in zip("abc", chosen, held, strict=True)
        },
        "conversations": {
            "26": {"0.1": {"bare any": conversation[0]}, "0.2": {"bare any": conversation[1]}}
        },
    }


def test_a_value_the_folds_choose_ships_when_it_pays_everywhere():
    assert ships(_entry()) == 0.2


def test_a_value_ships_only_if_no_project_left_out_loses_an_answer():
    assert ships(_entry(held=(90.0, 89.5, 92.0))) == 0.1


def test_a_value_ships_only_if_no_conversation_scores_lower():
    assert ships(_entry(conversation=(150.0, 149.9))) == 0.1


def test_a_value_ships_only_if_the_held_out_mean_rises():
    entry = _entry()
    for fold in entry["projects"].values():
        fold["at chosen"] = copy.deepcopy(fold["at shipped"])
    assert ships(entry) == 0.1


def test_the_shipped_value_stays_unless_most_folds_choose_another():
    assert ships(_entry(chosen=(0.2, 0.1, 0.1))) == 0.1
    assert ships(_entry(chosen=(0.2, 0.2, 0.1))) == 0.2


@pytest.mark.slow
@sqlite_only("the replay measures the SQLite deployment; it runs in the SQLite pass")
def test_the_fit_writes_each_numbers_entry_and_the_datas_digest(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _, locomo = tiny_dev_data(data)
    (data / "tiny2.json").write_text(json.dumps({**PROJECT, "project": "tiny2"}))
    path = tmp_path / "numbers.json"
    grids = {
        # A reason to keep another value than the method's, left from an older fit.
        "WORD_COVERAGE": {"grid": [0.45, 1.5], "kept": "measured elsewhere"},
        "COMMON_ANCHOR_DOCUMENTS": {"grid": [2, 4]},
        "FOCUS_WORD": {"grid": [0.75, 0.9]},
    }
    path.write_text(json.dumps({"data": {}, "numbers": grids}))
    out = run_bench(
        "relevance_fit.py",
        *("--files", str(data / "*.json"), "--locomo", str(locomo), "--pairs", "1:2,2:1"),
        *("--home", str(tmp_path / "home"), "--record", str(path)),
        *("--only", "WORD_COVERAGE,COMMON_ANCHOR_DOCUMENTS"),
        ci=False,
    )
    record = json.loads(path.read_text())
    assert record["numbers"]["FOCUS_WORD"] == {"grid": [0.75, 0.9]}  # not asked: kept
    for name, shipped, grid in (
        ("WORD_COVERAGE", 0.45, [0.45, 1.5]),
        ("COMMON_ANCHOR_DOCUMENTS", 2, [2, 4]),
    ):
        entry = record["numbers"][name]
        assert entry["shipped"] == shipped
        assert entry["grid"] == grid
        assert sorted(entry["projects"]) == ["tiny", "tiny2"]
        assert sorted(entry["conversations"]) == ["1", "2"]
        assert ships(entry) == shipped
        assert "kept" not in entry  # the method ships what the code does: no reason left
    tiny = hashlib.sha256((data / "tiny.json").read_bytes()).hexdigest()
    assert record["data"]["data/tiny.json"] == tiny
    assert "locomo/1.json" in record["data"]
    assert len(record["data"]["templates"]) == 64
    assert "the method ships" in out
