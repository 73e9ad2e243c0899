"""bench/pair_cost.py: what reading the prompt with each candidate would cost a prepare."""

import json

from bench.pair_cost import PROMPT_CHARACTERS, dev_data, measure
from tests.bench.runner import run_bench


def test_each_count_reads_that_many_pairs_of_the_cut_prompt_and_an_entry():
    batches = []
    prompts = [("x" * 500, ["first entry", "second entry", "third entry"])]
    times = measure(batches.append, prompts, [2, 5])
    assert batches[0] == ["warm up"]
    alone, two, alone_again, five = batches[1:]
    assert alone == alone_again == ["x" * PROMPT_CHARACTERS]
    assert len(two) == 2
    assert len(five) == 5
    assert all(pair.startswith("x" * PROMPT_CHARACTERS + " [SEP] ") for pair in two + five)
    assert {pair.split(" [SEP] ")[1] for pair in five} == set(prompts[0][1])
    assert sorted(times) == [2, 5]
    assert all(len(pairs) == len(single) == 1 for pairs, single in times.values())


def test_the_dev_data_gives_each_prompt_its_own_projects_entries(tmp_path):
    for name, entry in (("a", "alpha"), ("b", "beta")):
        project = {
            "entries": [{"text": entry}],
            "prompts": [{"prompt": f"{name}{n}"} for n in range(3)],
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(project), encoding="utf-8")
    found = dev_data(str(tmp_path / "*.json"), per_project=2)
    assert found == [("a0", ["alpha"]), ("a1", ["alpha"]), ("b0", ["beta"]), ("b1", ["beta"])]


def test_the_ci_configuration_prints_a_row_for_each_count():
    out = run_bench("pair_cost.py", "--pairs", "1,4")
    rows = [
        line.split("|")[1:-1]
        for line in out.splitlines()
        if line.startswith("| ") and "pairs" not in line
    ]
    assert [row[0].strip() for row in rows] == ["1", "4"]
    for row in rows:
        assert all(float(cell) > 0 for cell in row[1:])
