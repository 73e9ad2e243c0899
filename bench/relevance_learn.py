"""A learned pack decision measured against the rules, leave-one-project-out, on the table
bench/relevance_features.py writes (every candidate a pack considered, its evidence and
whether it answers).

    .venv/bin/python bench/relevance_learn.py /tmp/features.jsonl

For each of the seven coding-memory projects left out, a logistic regression over the
candidates' evidence is fitted on the six others (plain numpy, Newton's method, L2), its
thresholds are chosen on those six by bench/relevance_fit.py's objective (2 x recall_any +
precision + no-answer empties), and the seventh is scored with them. Three ways to use it:

- ``learned``: the scorer alone decides: a candidate is admitted when its probability
  reaches the admission threshold and ``--relative`` times the prompt's best, and the pack
  is empty when the best is under the gate (per-item admission and a pack-level decision);
- ``gate``: the rules' pack, emptied when the best probability is under the gate (the
  pack-level decision only);
- ``rescue``: the rules' pack; when the rules leave it empty, the candidates the scorer
  puts at the rescue threshold or more.

Each table gives, per held-out project, the learned way / the rules / search@8, and the
mean and the worst held out; then the LoCoMo check (the scorer fitted on all seven
projects, applied to the conversations it never saw). docs/relevance.md, section 6, says
what it showed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.relevance_record import objective  # noqa: E402

PACK_ITEMS = 8
KINDS = ("direct", "paraphrase", "boilerplate", "dominant-topic", "multi-entry")
# The rules' verdicts, as features of the scorer (it learns on top of them).
VERDICTS = (
    "ANCHORED WORDS MEANING SUBJECT OFF_FOCUS DUPLICATE NOTHING_ANSWERS WEAK_WORDS "
    "FAR_FROM_BEST FAR NOT_ANCHORED UNKNOWN_ANCHOR WORD_LIST UNREADABLE"
).split()

Model = tuple[np.ndarray, np.ndarray, np.ndarray]
Scored = list[tuple[dict[str, Any], list[tuple[str, float]]]]


def features(c: dict[str, Any], q: dict[str, Any]) -> list[float]:
    """One candidate's evidence (``c``) and its query's facts (``q``) as numbers."""
    sim = c["sim_e"] if c["sim_e"] is not None else 0.0
    semantic = c["semantic_rank"] is not None
    readable = c["readable"] and q["readable_query"]
    return [
        sim if readable else 0.0,
        (c["best_similarity"] - sim) if readable else 0.0,
        float(semantic),
        1.0 / c["semantic_rank"] if semantic else 0.0,
        float(c["lexical"]),
        c["coverage"],
        c["coverage"] * (not readable),
        math.log1p(c["held"]),
        c["spread"],
        float(c["anchor_picking"]),
        float(c["anchor_common"]),
        c["focus"],
        min(c["focus_gap"], 1.0),
        1.0 / (1 + c["place"]),
        float(not readable),
        float(q["anchors_known"] > 0),
        float(q["anchors_unknown"] > 0),
        float(q["anchors_only"]),
        float(q["single_segment"]),
        math.log1p(q["terms"]),
        math.log1p(q["segments"]),
        math.log1p(c["entry_terms"]),
        float(c["anchor_picking"]) * float(q["single_segment"]),
        *(float(c["verdict"] == verdict) for verdict in VERDICTS),
    ]


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> Model:
    """A logistic regression of ``y`` on ``x`` by Newton's method, on standardized columns
    (weights, the columns' means, their scales)."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0  # the intercept is not shrunk
    for _ in range(50):
        p = 1 / (1 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w, mean, scale


def probabilities(model: Model, x: np.ndarray) -> np.ndarray:
    w, mean, scale = model
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    return 1 / (1 + np.exp(-(z @ w)))


def training(records: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    x = [features(c, r["query_facts"]) for r in records for c in r["candidates"]]
    y = [float(c["label"]) for r in records for c in r["candidates"]]
    return np.array(x), np.array(y)


def scored(records: Sequence[dict[str, Any]], model: Model) -> Scored:
    """Each record with its candidates' (file, probability), in the decision's order."""
    found: Scored = []
    for r in records:
        cands = r["candidates"]
        p = (
            probabilities(model, np.array([features(c, r["query_facts"]) for c in cands]))
            if cands
            else []
        )
        found.append((r, [(c["file"], float(v)) for c, v in zip(cands, p, strict=True)]))
    return found


def figures(packs: Sequence[tuple[dict[str, Any], Sequence[str]]]) -> dict[str, float]:
    answerable = [(r, p) for r, p in packs if r["relevant"]]
    hits = [(r, p, len(set(p) & set(r["relevant"]))) for r, p in answerable]
    out = {
        "recall_any": _mean([h > 0 for _, _, h in hits]),
        "precision": _mean([h / len(p) for _, p, h in hits if p]),
        "wrapped precision": _mean(
            [h / len(p) for r, p, h in hits if p and r["kind"] == "boilerplate"]
        ),
        "no-answer empty": _mean([not p for r, p in packs if not r["relevant"]]),
    }
    for kind in KINDS:
        out[kind] = _mean([h > 0 for r, _, h in hits if r["kind"] == kind])
    return out


def _mean(values: Sequence[float]) -> float:
    return 100 * statistics.fmean(values) if values else float("nan")


def learned(relative: float) -> tuple[list[tuple[float, ...]], Callable[..., list[str]]]:
    def pack(
        r: dict[str, Any], items: list[tuple[str, float]], admit: float, gate: float
    ) -> list[str]:
        top = max((v for _, v in items), default=0.0)
        if not items or top < gate:
            return []
        kept = [f for f, v in items if v >= admit and v >= relative * top]
        return list(dict.fromkeys(kept))[:PACK_ITEMS]

    grid = [
        (admit, gate)
        for admit in (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.25, 0.3)
        for gate in (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
        if not gate or gate >= admit
    ]
    return grid, pack


def gated() -> tuple[list[tuple[float, ...]], Callable[..., list[str]]]:
    def pack(r: dict[str, Any], items: list[tuple[str, float]], gate: float) -> list[str]:
        return r["pack"] if max((v for _, v in items), default=0.0) >= gate else []

    return [(g,) for g in (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25)], pack


def rescued() -> tuple[list[tuple[float, ...]], Callable[..., list[str]]]:
    def pack(r: dict[str, Any], items: list[tuple[str, float]], rescue: float) -> list[str]:
        if r["pack"]:
            return r["pack"]
        ordered = sorted(items, key=lambda fv: -fv[1])
        return [f for f, v in ordered if v >= rescue][:PACK_ITEMS]

    return [(r,) for r in (1.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)], pack


def held_out(
    coding: Sequence[dict[str, Any]],
    way: tuple[list[tuple[float, ...]], Callable[..., list[str]]],
    l2: float,
    slack: float | None = None,
) -> list[tuple[str, tuple[float, ...], dict[str, float], dict[str, float], dict[str, float]]]:
    """Each project scored at the values chosen on the others (by ``objective``; with
    ``slack``, the best precision and empties among the values whose recall_any is within
    ``slack`` points of search@8's on the others)."""
    grid, pack = way
    rows = []
    for out in sorted({r["set"] for r in coding}):
        train = [r for r in coding if r["set"] != out]
        test = [r for r in coding if r["set"] == out]
        model = fit(*training(train), l2=l2)
        on_train = scored(train, model)
        floor = figures([(r, r["search"]) for r in train])["recall_any"] - (slack or 0.0)

        def value(g: tuple[float, ...]) -> float:
            f = figures([(r, pack(r, i, *g)) for r, i in on_train])  # noqa: B023
            if slack is None:
                return objective(f)
            return f["precision"] + f["no-answer empty"] - 1000 * max(0.0, floor - f["recall_any"])  # noqa: B023

        chosen = max(grid, key=value)
        rows.append(
            (
                out,
                chosen,
                figures([(r, pack(r, i, *chosen)) for r, i in scored(test, model)]),
                figures([(r, r["pack"]) for r in test]),
                figures([(r, r["search"]) for r in test]),
            )
        )
    return rows


COLUMNS = ("recall_any", "paraphrase", "precision", "wrapped precision", "no-answer empty")


def table(name: str, rows: Sequence[Any]) -> None:
    print(f"\n## {name}: learned / rules / search@8, at values chosen on the other projects\n")
    print("| held out | chosen | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 2) + "|")
    for out, chosen, way, rules, search in rows:
        cells = [f"{way[k]:.1f} / {rules[k]:.1f} / {search[k]:.1f}" for k in COLUMNS]
        print(f"| {out} | {', '.join(map(str, chosen))} | " + " | ".join(cells) + " |")
    for label, pick in (("mean", statistics.fmean), ("worst", min)):
        cells = []
        for k in COLUMNS:
            parts = []
            for at in (2, 3, 4):
                values = [row[at][k] for row in rows if not math.isnan(row[at][k])]
                parts.append(f"{pick(values):.1f}" if values else "")
            cells.append(" / ".join(parts))
        print(f"| **{label}** | | " + " | ".join(cells) + " |")


def locomo_check(
    records: Sequence[dict[str, Any]], coding: Sequence[dict[str, Any]], way: Any, l2: float
) -> None:
    """The scorer fitted on all seven projects (values chosen there) on the conversations."""
    grid, pack = way
    model = fit(*training(coding), l2=l2)
    on_coding = scored(coding, model)
    chosen = max(
        grid, key=lambda g: objective(figures([(r, pack(r, i, *g)) for r, i in on_coding]))
    )
    conversations = scored([r for r in records if r["data"] in ("locomo", "cross")], model)
    found = []
    for kind in ("bare", "wrapped", "cross"):
        mine = [(r, pack(r, i, *chosen)) for r, i in conversations if r["kind"] == kind]
        rules = [(r, r["pack"]) for r, _ in conversations if r["kind"] == kind]
        if kind == "cross":
            value = [_mean([not p for _, p in sub]) for sub in (mine, rules)]
            found.append(f"cross-conversation empty {value[0]:.1f} / {value[1]:.1f}")
        else:
            value = [
                _mean([bool(set(p) & set(r["relevant"])) for r, p in sub]) for sub in (mine, rules)
            ]
            found.append(f"LoCoMo {kind} any {value[0]:.1f} / {value[1]:.1f}")
    print(
        f"\nLoCoMo (learned / rules; values {chosen} chosen on all seven projects): "
        + "; ".join(found)
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("table", help="bench/relevance_features.py's output")
    parser.add_argument("--relative", type=float, default=0.2, help="learned: share of the best")
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument(
        "--slack", type=float, help="choose within this many points of search@8's recall"
    )
    args = parser.parse_args(argv)
    with open(args.table, encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    coding = [r for r in records if r["data"] == "coding"]
    if not coding:
        raise SystemExit(f"{args.table}: no coding-memory prompt")
    ways = {
        f"learned (admission and gate, relative {args.relative})": learned(args.relative),
        "gate (the rules' pack, emptied under the learned gate)": gated(),
        "rescue (the rules' pack; when empty, the learned candidates)": rescued(),
    }
    for name, way in ways.items():
        table(name, held_out(coding, way, args.l2, args.slack))
        if any(r["data"] != "coding" for r in records):
            locomo_check(records, coding, way, args.l2)


if __name__ == "__main__":
    main(sys.argv[1:])
