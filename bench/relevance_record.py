"""The record of the relevance decision's numbers (``bench/relevance_numbers.json``): for
each number of ``powercontext.search.relevance.numbers``, the grid it was fitted over, the
value each coding project's fold chose (on the six others) with that project's held-out
figures, each LoCoMo conversation's figures at every value of the grid (figures to a
hundredth), and the digests of the data it was fitted on; ``ships`` reads from them the
value the method ships. Where the code keeps another value than the method's, the entry
says why in ``kept`` (written by hand: a measurement the fit does not make, such as the
figure a rule exists for, captured prompts through the server, or a prepare's time), and
only there.

``bench/relevance_fit.py --record`` writes it from the development data;
tests/bench/test_relevance_record.py pins the shipped numbers to it, so that a number
changed by hand, or a refit whose verdict moved, fails until the record and the code agree.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import statistics
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RECORD = Path(__file__).with_name("relevance_numbers.json")


def decision_numbers() -> dict[str, float]:
    """Every number of the relevance decision, by name, as the code ships it."""
    from powercontext.search.relevance import numbers

    return {
        name: value
        for name, value in vars(numbers).items()
        if name.isupper() and isinstance(value, int | float) and not isinstance(value, bool)
    }


def digests(paths: Iterable[Path], root: Path) -> dict[str, str]:
    """{path under ``root``: sha256 of its bytes}: which data a record was fitted on."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(paths)
    }


def objective(figures: dict[str, Any]) -> float:
    """What a value is chosen by on the coding projects it may see: recall_any counts twice
    as much as precision and as no-answer empties (a pack that loses an answer costs more
    than one that holds an unrelated entry), the three the issue's targets name."""
    return (
        2 * (figures.get("recall_any") or 0.0)
        + (figures.get("precision") or 0.0)
        + (figures.get("no-answer empty") or 0.0)
    )


def locomo_objective(figures: dict[str, Any]) -> float:
    """LoCoMo's: evidence found bare and wrapped, and empties when the question is about
    another conversation."""
    return (
        (figures.get("bare any") or 0.0)
        + (figures.get("wrapped any") or 0.0)
        + (figures.get("cross empty") or 0.0)
    )


def ships(entry: dict[str, Any]) -> float:
    """The value the method ships for one number of the record.

    The coding projects' folds propose: the value most of them chose, a tie in count going
    to the shipped value. Another value than the shipped one ships only when it pays
    everywhere it can be checked: no project left out finds fewer answers at the value its
    fold chose than at the shipped one, the held-out mean objective rises, and no LoCoMo
    conversation scores lower at it (docs/relevance.md, "How its numbers are chosen").
    """
    shipped = entry["shipped"]
    folds = entry["projects"].values()
    counts = Counter(fold["chosen"] for fold in folds)
    most = max(counts.values())
    proposed = [value for value, count in counts.items() if count == most]
    if shipped in proposed or len(proposed) != 1:
        return shipped
    value = proposed[0]
    if any(f["at chosen"]["recall_any"] < f["at shipped"]["recall_any"] for f in folds):
        return shipped
    held = statistics.fmean(objective(f["at chosen"]) for f in folds)
    before = statistics.fmean(objective(f["at shipped"]) for f in folds)
    if held <= before:
        return shipped
    for by_value in entry.get("conversations", {}).values():
        if locomo_objective(by_value[str(value)]) < locomo_objective(by_value[str(shipped)]):
            return shipped
    return value


def read(path: Path = RECORD) -> dict[str, Any]:
    if not path.exists():
        return {"data": {}, "numbers": {}}
    return dict(json.loads(path.read_text(encoding="utf-8")))


@contextmanager
def updating(path: Path = RECORD) -> Iterator[dict[str, Any]]:
    """The record, to change and write back whole: two fits running at once (one per core,
    each on its own numbers) each add their entries without losing the other's."""
    with open(Path(tempfile.gettempdir()) / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = read(path)
        yield record
        order = list(decision_numbers())
        record["numbers"] = dict(
            sorted(
                record["numbers"].items(),
                key=lambda item: order.index(item[0]) if item[0] in order else len(order),
            )
        )
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, path)
