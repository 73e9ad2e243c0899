"""The focus rule of the relevance decision, measured on both dev sets at other spreads
and with the two forms of token vectors (docs/relevance-history.md).

    .venv/bin/python bench/focus_gate.py --files '<dev>/coding-memory-dev/*.json' \\
        --locomo <dev>/locomo-dev --home /tmp/replay-home

A candidate's *focus* on a prompt segment is how much of it the candidate speaks to, word
by word: each content token of the segment takes its best cosine to the candidate's
tokens, and the focus is their mean (ColBERT's MaxSim, as a recall;
``powercontext.search.relevance.focus``). The rule (``relevance.off_focus``, run here at
each ``D``):
an admitted candidate holding no anchor of the query (the verdict is not "anchored")
whose best focus is more than ``D`` under the best of the first ``WINDOW`` admitted
candidates' on the same segment is left out, and the pack takes the next ones. Two forms
of the token vectors:

- **states**: the model's last hidden states, in context (the decision's);
- **table**: the model's input word table (no context): a lookup, no model run. It needs
  the ``onnx`` package to read the table.

Every pack of bench/relevance_replay.py's scopes is replayed (the same ``--home`` reuses
them): the candidates the decision admitted before the rule, in order, then the rule at
each ``D`` of ``--spreads``, the pack keeping at most its window of items. The figures are
bench/relevance_replay.py's; "shipped" is the packs as prepare gives them.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.locomo import load_conversation, load_templates, render  # noqa: E402
from bench.relevance_replay import dev_data_arguments, fill, packed  # noqa: E402
from bench.vector_bench import setup_django  # noqa: E402

# The admitted candidates whose focus is measured (relevance.numbers.FOCUS_WINDOW).
WINDOW = 16
# The memory items a pack holds at most (contextpack.builder.MAX_MEMORY_ITEMS).
PACK_ITEMS = 8
SPREADS = "0.08,0.1,0.12,0.15,0.18,0.2,0.25"


@dataclass
class Asked:
    """One prepare: ``kind`` (coding, loco-bare, loco-wrapped, cross), the prompt's
    semantic segments, the admitted candidates in order with their verdicts, their texts
    and the relevant ones (evidence); ``pack`` what the pack cites today."""

    kind: str
    segments: list[str]
    admitted: list[tuple[str, str]]
    texts: dict[str, str]
    relevant: list[str]
    pack: list[str]


def asked_everything(args: argparse.Namespace) -> list[Asked]:
    """Every dev prepare, with the decision's admitted candidates (captured from the
    memory family's searches: ``FamilyIndex.search`` calls the query module's ``search``)."""
    from memory.search_index import MEMORY_INDEX
    from powercontext.search import query as search_query
    from powercontext.search.ranking import segmented, semantic_segments

    home = Path(args.home)
    seen: list[Any] = []
    judged = search_query.search

    def capture(index: Any, query: Any, **kwargs: Any) -> Any:
        found = judged(index, query, **kwargs)
        if index is MEMORY_INDEX:
            seen.append((query, found))
        return found

    search_query.search = capture
    asked: list[Asked] = []

    def ask(
        kind: str,
        scope: str,
        query: str,
        files: dict[str, str],
        texts: dict[str, str],
        relevant: list[str],
    ) -> None:
        seen.clear()
        pack = packed(scope, query, args.max_bytes, files)
        prompt, found = seen[-1]
        # Admitted before the focus rule: the rule is what is measured.
        admitted = [
            (files.get(item.ranked.hit.cited_id, ""), item.verdict.name)
            for item in found.considered
            if item.admitted or item.verdict.name == "OFF_FOCUS"
        ]
        segments = semantic_segments(segmented(query), prompt.recurring)
        asked.append(Asked(kind, segments, admitted, texts, relevant, pack))

    for path in sorted(glob.glob(args.files)):
        project = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = [(e["id"], e["kind"], e["text"]) for e in project["entries"]]
        scope = f"replay-{project['project']}"
        ids = fill(home, scope, entries)
        files = {entry_id: file_id for file_id, entry_id in reversed(ids.items())}
        texts = {e["id"]: e["text"] for e in project["entries"]}
        for prompt in project["prompts"][: args.limit]:
            ask("coding", scope, prompt["prompt"], files, texts, prompt["relevant"])
    template = load_templates(Path(args.templates))[0][1]
    conversations = {p.stem: load_conversation(p) for p in sorted(Path(args.locomo).glob("*.json"))}
    turns: dict[str, dict[str, str]] = {}
    for name, conversation in conversations.items():
        entries = [(t.dia_id, "fact", t.text) for t in conversation.turns]
        turns[name] = fill(home, f"replay-locomo-{name}", entries)
    for name, conversation in conversations.items():
        files = {entry_id: dia for dia, entry_id in reversed(turns[name].items())}
        texts = {t.dia_id: t.text for t in conversation.turns}
        for question in conversation.questions[: args.limit]:
            evidence = [d for d in question.evidence if d in turns[name]]
            if evidence:
                for kind, form in (("loco-bare", "{question}"), ("loco-wrapped", template)):
                    query = render(form, question.text)
                    ask(kind, f"replay-locomo-{name}", query, files, texts, evidence)
    for pair in args.pairs.split(","):
        asked_in, stored = pair.split(":")
        if asked_in in conversations and stored in conversations:
            files = {entry_id: dia for dia, entry_id in turns[stored].items()}
            texts = {t.dia_id: t.text for t in conversations[stored].turns}
            for question in conversations[asked_in].questions[: args.limit]:
                ask("cross", f"replay-locomo-{stored}", question.text, files, texts, [])
    search_query.search = judged
    return asked


class TokenVectors:
    """Unit vectors of a text's content tokens, in both forms: ``states``, the decision's
    own (``token_states.rows_for``: the shipped model's run, kept as the server keeps them), and
    ``table``, the model's input word table at the same tokens."""

    def __init__(self) -> None:
        import numpy

        from powercontext.embedding import model_file, wordpiece

        self._np = numpy
        loaded = model_file.load(model_file.chosen())
        self._tokenizer = wordpiece.tokenizer(loaded.vocabulary)
        self._path = loaded.path
        self._table: Any = None
        self._tables: dict[str, Any] = {}

    def states(self, text: str) -> Any:
        from powercontext.search import token_states

        rows = token_states.rows_for([text])
        if rows is None:
            raise SystemExit("the semantic channel cannot embed: no token states to measure")
        return rows[0].astype("float32")  # kept as float16; products of those skip BLAS

    def table(self, text: str) -> Any:
        from powercontext.embedding.model import is_word_token
        from powercontext.search.token_states import FUNCTION_WORDS

        if text not in self._tables:
            encoding = self._tokenizer.encode(text)
            ids = [
                token_id
                for token_id, token in zip(encoding.ids, encoding.tokens, strict=True)
                if is_word_token(token) and token not in FUNCTION_WORDS
            ]
            rows = self._word_table()[ids]
            norms = self._np.maximum(self._np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
            self._tables[text] = rows / norms
        return self._tables[text]

    def _word_table(self) -> Any:
        """The input word embeddings, dequantised (int8 with a scale per row in the int8
        form; floats in others)."""
        if self._table is None:
            import onnx
            from onnx import numpy_helper

            found = {
                init.name: numpy_helper.to_array(init)
                for init in onnx.load(str(self._path)).graph.initializer
                if "word_embeddings" in init.name
            }
            weights = next(v for k, v in found.items() if k.endswith(("weight", "weight_q")))
            scale = next((v for k, v in found.items() if k.endswith("scale")), 1.0)
            zero = next((v for k, v in found.items() if k.endswith("zero_point")), 0)
            self._table = (weights.astype("float32") - zero) * scale
        return self._table


def matches(vectors: Callable[[str], Any], segments: Sequence[str], text: str) -> list[Any]:
    """For each segment, its content tokens' best cosines to the tokens of ``text``
    (``focus.matches`` with the bench's vectors); their mean is the focus."""
    entry = vectors(text)
    found = []
    for segment in segments:
        query = vectors(segment)
        found.append((query @ entry.T).max(axis=1) if len(entry) else query[:, 0] * 0.0)
    return found


def kept(asked: Asked, focused: dict[str, list[Any]], spread: float | None) -> list[str]:
    """The pack with the decision's rule (``relevance.off_focus``) at ``spread``: the
    candidates it leaves out, the next ones taking their places (None: without it)."""
    from powercontext.search import relevance
    from powercontext.search.relevance import numbers

    admitted = [(key, verdict) for key, verdict in asked.admitted if key in asked.texts]
    left_out: frozenset[str] = frozenset()
    if spread is not None:
        shipped = numbers.FOCUS_SPREAD
        numbers.FOCUS_SPREAD = spread
        try:
            anchored = [(key, verdict == "ANCHORED") for key, verdict in admitted]
            left_out = relevance.off_focus(anchored, focused).left_out
        finally:
            numbers.FOCUS_SPREAD = shipped
    chosen = [key for key, _ in admitted if key not in left_out]
    # An empty pack is the "something must answer" gate's, which the rule does not move.
    return chosen[:PACK_ITEMS] if asked.pack else []


def figures(everything: Sequence[Asked], packs: Sequence[list[str]]) -> dict[str, float]:
    def mean(values: Sequence[bool | float]) -> float:
        return 100 * statistics.fmean(values) if values else float("nan")

    precision, recall, whole, empty, bare_any, bare_all, wrapped, cross = ([] for _ in range(8))
    for asked, pack in zip(everything, packs, strict=True):
        relevant = set(asked.relevant)
        if asked.kind == "coding" and relevant:
            hit = len(relevant & set(pack))
            recall.append(hit > 0)
            whole.append(hit == len(relevant))
            if pack:
                precision.append(hit / len(pack))
        elif asked.kind == "coding":
            empty.append(not pack)
        elif asked.kind == "loco-bare":
            bare_any.append(bool(relevant & set(pack)))
            bare_all.append(relevant <= set(pack))
        elif asked.kind == "loco-wrapped":
            wrapped.append(bool(relevant & set(pack)))
        else:
            cross.append(not pack)
    return {
        "coding precision": mean(precision),
        "recall_any": mean(recall),
        "recall_all": mean(whole),
        "no-answer empty": mean(empty),
        "LoCoMo bare any": mean(bare_any),
        "all": mean(bare_all),
        "wrapped any": mean(wrapped),
        "cross empty": mean(cross),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    dev_data_arguments(parser)
    parser.add_argument("--spreads", default=SPREADS, help="values of D, comma-separated")
    parser.add_argument("--max-bytes", type=int, default=8000)
    parser.add_argument("--limit", type=int, default=None, help="prompts/questions per file")
    parser.add_argument("--ci", action="store_true", help="5 prompts a file")
    args = parser.parse_args(argv)
    if args.ci:
        args.limit = 5
    if not glob.glob(args.files):
        raise SystemExit(f"--files {args.files}: no file")
    args.home = args.home or tempfile.mkdtemp(prefix="pc-focus-")
    Path(args.home).mkdir(parents=True, exist_ok=True)
    setup_django(Path(args.home), None)
    everything = asked_everything(args)
    vectors = TokenVectors()
    print(f"# {len(everything)} prepares; home {args.home}")
    print("form | D | " + " | ".join(figures(everything, [a.pack for a in everything])))
    print("shipped | - | " + _row(figures(everything, [a.pack for a in everything])))
    for form in ("states", "table"):
        started = time.perf_counter()
        encoded = 0
        focused = []
        for asked in everything:
            window = [key for key, _ in asked.admitted[:WINDOW] if key in asked.texts]
            encoded += len(window)
            focused.append(
                {
                    key: matches(getattr(vectors, form), asked.segments, asked.texts[key])
                    for key in window
                }
            )
        seconds = time.perf_counter() - started
        for spread in [None, *(float(value) for value in args.spreads.split(","))]:
            packs = [kept(a, f, spread) for a, f in zip(everything, focused, strict=True)]
            shown = "without" if spread is None else spread
            print(f"{form} | {shown} | " + _row(figures(everything, packs)))
        print(f"# {form}: {encoded} candidates scored in {seconds:.1f} s (texts kept once each)")
    _print_cost(everything)


def _row(values: dict[str, float]) -> str:
    return " | ".join(f"{value:.1f}" for value in values.values())


def _print_cost(everything: Sequence[Asked]) -> None:
    """What the states form costs a prepare whose window's texts are not kept (a restarted
    server): the median time of ``token_states.rows_for`` over a coding pack's first eight
    admitted texts, with nothing kept."""
    from powercontext.search import token_states

    times = []
    for asked in everything:
        if asked.kind != "coding":
            continue
        texts = [asked.texts[key] for key, _ in asked.admitted[:8] if key in asked.texts]
        token_states.forget()
        started = time.perf_counter()
        token_states.rows_for(texts)
        times.append((time.perf_counter() - started) * 1000)
    if times:
        print(
            f"# states: a coding pack's first 8 admitted texts with nothing kept, median "
            f"{statistics.median(times):.1f} ms"
        )


if __name__ == "__main__":
    main()
