"""bench/relevance_features.py and bench/relevance_learn.py: the table of every candidate a
pack considered, and a learned decision scored leave-one-project-out against the rules."""

import json
import tempfile
from pathlib import Path

import pytest

from bench import relevance_learn
from tests.bench.runner import run_bench
from tests.bench.test_restraint import PROJECT, tiny_dev_data
from tests.conftest import sqlite_only


def candidate(file, label, similarity, verdict):
    return {
        "file": file,
        "label": label,
        "place": 0,
        "verdict": verdict,
        "admitted": verdict == "MEANING",
        "lexical": False,
        "semantic_rank": 1,
        "similarity": similarity,
        "sim_e": similarity,
        "best_similarity": 0.9,
        "coverage": 0.0,
        "held": 0,
        "spread": 0.0,
        "subjects": 0,
        "readable": True,
        "entry_terms": 10,
        "anchor_picking": False,
        "anchor_common": False,
        "focus": similarity,
        "focus_gap": 0.0,
        "score": similarity,
    }


FACTS = {
    "anchors_known": 0,
    "anchors_common": 0,
    "anchors_unknown": 0,
    "anchors_only": False,
    "single_segment": True,
    "readable_query": True,
    "terms": 5,
    "segments": 1,
    "log_chars": 3.0,
}


def prompt(project, answered):
    """A prompt whose answer (e1) is near and an unrelated entry (e2) far, the rules'
    pack holding both; or, unanswerable, two far entries and the rules' pack holding one."""
    if answered:
        candidates = [candidate("e1", True, 0.8, "MEANING"), candidate("e2", False, 0.2, "MEANING")]
        return {
            "data": "coding",
            "set": project,
            "kind": "direct",
            "relevant": ["e1"],
            "pack": ["e1", "e2"],
            "search": ["e1", "e2"],
            "query_facts": FACTS,
            "candidates": candidates,
        }
    candidates = [candidate("e3", False, 0.25, "MEANING"), candidate("e4", False, 0.2, "FAR")]
    return {
        "data": "coding",
        "set": project,
        "kind": "no-answer",
        "relevant": [],
        "pack": ["e3"],
        "search": ["e3", "e4"],
        "query_facts": FACTS,
        "candidates": candidates,
    }


def test_the_scorer_learns_the_evidence_that_separates_answers():
    records = [prompt(p, answered) for p in "abc" for answered in (True, True, False)]
    model = relevance_learn.fit(*relevance_learn.training(records))
    scored = dict(relevance_learn.scored([records[0]], model)[0][1])
    assert scored["e1"] > 0.5 > scored["e2"]


def test_each_project_is_scored_with_thresholds_chosen_on_the_others(capsys):
    records = [prompt(p, answered) for p in "abc" for answered in (True, True, False)]
    rows = relevance_learn.held_out(records, relevance_learn.learned(0.2), 1.0)
    assert [row[0] for row in rows] == ["a", "b", "c"]
    for _, _, learned, rules, search in rows:
        # The learned pack keeps the answer alone and stays empty when nothing answers;
        # the rules' pack held the unrelated entries too.
        assert learned["recall_any"] == 100.0
        assert learned["precision"] == 100.0
        assert learned["no-answer empty"] == 100.0
        assert rules["precision"] == 50.0
        assert rules["no-answer empty"] == 0.0
        assert search["recall_any"] == 100.0
    relevance_learn.table("learned", rows)
    out = capsys.readouterr().out
    assert "| **mean** | | 100.0 / 100.0 / 100.0 |" in out


@pytest.mark.slow
@sqlite_only("the replay measures the SQLite deployment; it runs in the SQLite pass")
def test_the_features_of_the_dev_data_feed_the_learned_table(tmp_path, capsys):
    data = Path(tempfile.mkdtemp(dir=tmp_path))
    _, locomo = tiny_dev_data(data)
    (data / "tiny2.json").write_text(json.dumps({**PROJECT, "project": "tiny2"}))
    out = tmp_path / "features.jsonl"
    args = ["--files", str(data / "*.json"), "--locomo", str(locomo), "--pairs", "1:2,2:1"]
    run_bench("relevance_features.py", *args, "--home", str(tmp_path / "home"), "--out", str(out))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    coding = [r for r in records if r["data"] == "coding"]
    assert {r["set"] for r in coding} == {"tiny", "tiny2"}
    # The rules' pack and search@8 of "How do I run the test suite?" hold its answer, and
    # the candidates carry its label.
    asked = next(r for r in coding if r["relevant"] == ["e1"])
    assert "e1" in asked["pack"]
    assert "e1" in asked["search"]
    assert any(c["file"] == "e1" and c["label"] for c in asked["candidates"])
    assert {r["data"] for r in records} == {"coding", "locomo", "cross"}
    relevance_learn.main([str(out)])
    assert "| tiny2 |" in capsys.readouterr().out
