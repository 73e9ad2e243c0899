"""The relevance evidence is the same float whatever the process's hash seed
(powercontext.search.relevance.evidence). Pure: no database; each seed is its own
interpreter, since the seed is fixed when one starts."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# Weights whose sum depends on the order it is taken in (0.1 + 0.2 is not 0.3 in binary):
# a set's order, which follows the hash seed, gave 5.85 in one process and
# 5.8500000000000005 in the next, and a coverage a last bit apart.
PROGRAM = """
from powercontext.search.relevance import evidence
terms = "alpha beta gamma delta epsilon zeta eta theta".split()
weights = dict(zip(terms, (0.1, 0.2, 0.3, 0.7, 1e-16, 3.3, 0.15, 1.1)))
(_, total), = evidence.weighted(weights, [terms]).segments
held = evidence.coverage(["alpha", "gamma", "eta", "epsilon"], weights, [terms])
print(repr(total), repr(held))
"""


def _evidence_under(seed: int) -> str:
    environment = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return run.stdout.strip()


def test_the_evidence_does_not_depend_on_the_hash_seed():
    found = {seed: _evidence_under(seed) for seed in range(6)}
    assert len(set(found.values())) == 1, found
    # The sum in the segment's own order.
    total = 0.0
    for weight in (0.1, 0.2, 0.3, 0.7, 1e-16, 3.3, 0.15, 1.1):
        total += weight
    assert found[0].split()[0] == repr(total)
