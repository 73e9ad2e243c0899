"""The embedding model's int8 form, derived from the shipped file: one recipe, the same bytes
on every machine.

The shipped all-MiniLM-L6-v2 file stores its weights as int8 but turns them back into
float32 inside the graph (``Cast`` then ``Mul`` by a scale), so ONNX Runtime folds them
into float32 constants at load and runs float32 matrix products: the weights are int8
on disk only. Quantising the folded graph again, per output channel and with int8
matrix products (``onnxruntime.quantization.quantize_dynamic``, the runtime's own tool),
runs the same model about twice as fast in half the memory.

Quantised as it is, though, its vectors drift (cosine 0.984 at worst to the shipped
form's): each product's activations share one scale per call, and a few channels are
far larger than the rest (a layer norm's channel 99 reaches 28 where the median channel
reaches 1.7; one feed-forward channel reaches 24 where most stay under 6), so most
values get a handful of levels. Before quantising, :func:`derive` therefore

- moves that difficulty from activations to weights (SmoothQuant, Xiao et al. 2023):
  a layer norm's output channel j is divided by s_j = sqrt(max|X_j| / max|W_j|) on its
  way into the products it feeds, and row j of their weights multiplied by it. s_j is
  rounded to a power of two, so both are exact in float32 and the graph computes what
  it computed before; max|X_j| comes from the sentences of ``calibration.txt``;
- computes the feed-forward output's eight largest input channels (by the same
  calibration) in float32, beside the int8 product of the others (as LLM.int8() does);
- leaves the token and position embeddings as the shipped file stores them (int8 with a
  scale per row; the quantiser would give the whole table one scale);
- keeps the weights in 7 bits: x86-64 CPUs without VNNI sum two u8 x s8 products into 16
  bits and clamp (``VPMADDUBSW``), which 7-bit weights can never overflow
  (2 x 255 x 64 = 32,640), so the one file computes exact sums on every CPU;

and after quantising fixes each product's activation range to the one the calibration
sentences reach (:func:`fix_activation_ranges`), so that a text's vector does not depend
on the texts batched with it. Last, it rewrites the graph into ONNX Runtime's fused kernels
(``modelbuild.kernels``: the same values in fewer passes), kept only when its vectors match
(:func:`fused`).

The same bytes on every machine: the folding, the quantiser and the graph rewrites are
exact arithmetic on the stored weights, but the calibration runs the model, and its float
kernels round by the CPU (vector width, fused multiply-add, which fusions apply): the
figures it gives moved by up to 2e-4 (relative) between ONNX Runtime's fused and unfused
kernels here, while one channel's smoothing factor lies 7e-5 from rounding to the next
power of two. Rounding the figures would only make another file unlikely, so they are
recorded instead (:class:`Figures`, ``calibration.json``). A derivation from the recorded
figures runs the model only for the fused kernels' check, whose cosine (0.999) is far from
its threshold (0.995), and gives the same file on any CPU; measuring them again
(``python -m modelbuild --calibrate``) is a deliberate step that may change the file.
docs/embedding.md has the figures.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

log = logging.getLogger(__name__)

# Names the steps below; change it whenever they change (it is recorded in the file, so
# its digest, the model's identity, changes with it).
RECIPE: Final = (
    "ort-basic-fold+smooth-0.5-pow2+ffn-out-8-float+embeddings-as-shipped"
    "+int8-per-channel-7-bit-matmul+calibrated-activation-ranges"
    "+fused-kernels-bias-gelu+no-skip-layer-norm/6"
)
# The sentences whose activations set the smoothing factors, the float channels and the
# activation ranges (:class:`Figures`): written for this purpose (code, chat, logs, a
# wrapped prompt), not taken from any data set the recall is measured on.
CALIBRATION: Final = Path(__file__).with_name("calibration.txt")
# SmoothQuant's migration strength: 0.5 splits the range evenly between activations and
# weights (with per-call ranges, 0.3 kept cosine 0.993 at worst, 0.7 0.996, 0.5 0.997).
SMOOTHING_STRENGTH: Final = 0.5
# Input channels of each feed-forward output product computed in float32 (8 of 1,536:
# 32 did no better).
FLOAT_CHANNELS: Final = 8
# What the calibration measured, as the derivation uses it (:class:`Figures`).
FIGURES: Final = Path(__file__).with_name("calibration.json")
FLOAT32: Final = 1  # onnx.TensorProto.FLOAT, without importing onnx at import time

# all-MiniLM-L6-v2's attention heads (kernels' MultiHeadAttention needs the number).
ATTENTION_HEADS: Final = 12
# The fused graph is kept only if its vectors are this close to the unfused one's on every
# calibration sentence. Its kernels round otherwise, which moves a vector by cosine 0.9985
# at worst (1,074 dev texts; 0.9990 on the calibration sentences); a rewrite that computes
# something else does not come near (attention in 6 or 24 heads instead of 12: 0.64, 0.76).
FUSED_COSINE: Final = 0.995
# ONNX Runtime fusions the int8 form runs without (part of the recipe: the session options
# round too; the build records them beside the file and the runtime reads them there).
# SkipLayerNormalization, the residual Add and LayerNormalization in one kernel, was the
# slowest operator of the graph on the 2-core machine: the first 30 bench prompts'
# segments took 22.4 ms a prompt on one thread without it, 27.9 with it, and the vectors
# are as close to the shipped form's either way (mean cosine 0.99893).
SKIPPED_FUSIONS: Final = ("SkipLayerNormFusion",)
# The operators of an int8 matrix product, unfused and fused.
INT8_PRODUCTS: Final = frozenset({"MatMulInteger", "MatMulIntegerToFloat"})


class DerivationFailed(RuntimeError):
    """The int8 form could not be derived (a graph the steps do not recognise, a package
    missing): the reason says which."""


@dataclass
class Figures:
    """What the calibration sentences measured, in the form the derivation uses, by the
    name of the tensor measured: each layer-norm output channel's smoothing factor (the
    exponent of a power of two), each feed-forward output product's input channels kept in
    float32, and each quantised product's activation range (low, high). Recorded in
    :data:`FIGURES`, so that a derivation is the same bytes on any CPU."""

    smoothing: dict[str, list[int]] = field(default_factory=dict)
    float_channels: dict[str, list[int]] = field(default_factory=dict)
    activation_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path = FIGURES) -> Figures:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            smoothing={name: list(map(int, values)) for name, values in data["smoothing"].items()},
            float_channels={
                name: list(map(int, values)) for name, values in data["float_channels"].items()
            },
            activation_ranges={
                name: (float(low), float(high))
                for name, (low, high) in data["activation_ranges"].items()
            },
        )

    def to_json(self) -> str:
        """One tensor a line, names sorted: a recalibration's diff shows what moved."""
        sections = []
        for key, values in (
            ("smoothing", self.smoothing),
            ("float_channels", self.float_channels),
            ("activation_ranges", {k: list(v) for k, v in self.activation_ranges.items()}),
        ):
            lines = [
                f"    {json.dumps(name)}: {json.dumps(values[name])}" for name in sorted(values)
            ]
            sections.append(f'  "{key}": {{\n' + ",\n".join(lines) + "\n  }")
        return "{\n" + ",\n".join(sections) + "\n}\n"


@dataclass(frozen=True)
class Derived:
    """The derived model (an ONNX ``ModelProto``) and the figures it was derived with."""

    model: Any
    figures: Figures


def derive(source: Path, work: Path, figures: Figures | None = None) -> Derived:
    """The int8 form of ``source`` (the shipped file): pre-processed (constants folded),
    prepared (smoothing, float channels, embeddings as shipped), its matrix products
    quantised per channel with 7-bit weights, their activation ranges fixed, rewritten
    into fused kernels, the recipe recorded in it. ``work`` takes the intermediate files.
    With ``figures`` (recorded), no figure is measured and one missing is an error; without,
    the calibration sentences measure them all (returned with the model).

    Raises :class:`DerivationFailed` with the reason."""
    import onnx
    import onnxruntime
    from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic

    folded, prepared, dynamic = (work / name for name in ("folded", "prepared", "dynamic"))
    measure = figures is None
    figures = Figures() if figures is None else figures
    try:
        # Symbolic shape inference needs sympy and adds nothing for these fixed shapes;
        # the pre-processing's ONNX Runtime pass (basic level: folding and dead nodes
        # only, the same graph on any machine) is what turns the stored int8 weights into
        # the constants the quantiser reads.
        quant_pre_process(str(source), str(folded), skip_symbolic_shape=True)
        model = onnx.load(str(folded))
        kept_float = prepare(model, onnx.load(str(source)), figures, measure=measure)
        onnx.save(model, str(prepared))
        del model
        quantize_dynamic(
            prepared,
            dynamic,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=kept_float,
            # Weights only: the activations' DynamicQuantizeLinear keeps 8 bits.
            reduce_range=True,
        )
        model = onnx.load(str(dynamic))
        fix_activation_ranges(model, figures, measure=measure)
        model = fused(model)
        # In the file, so that its digest (the model's identity, which the stored vectors
        # are recorded under) changes with anything that changes the vectors: the recipe,
        # which names the session's options too, and the runtime that quantised it.
        for key, value in (
            ("powercontext.recipe", RECIPE),
            ("onnxruntime", onnxruntime.__version__),
        ):
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
    except DerivationFailed:
        raise
    except Exception as exc:  # onnx and onnxruntime raise their own types
        raise DerivationFailed(f"cannot derive the int8 form of {source}: {exc}") from exc
    kinds = {node.op_type for node in model.graph.node}
    # The pre-processing logs its failures instead of raising them; unfolded weights
    # would leave the matrix products in float32, as slow as the shipped file.
    if not kinds & INT8_PRODUCTS or "DynamicQuantizeLinear" in kinds:
        raise DerivationFailed(
            f"quantising {source} left no int8 matrix product with a fixed range"
        )
    return Derived(model, figures)


def fused(model: Any) -> Any:
    """``model`` rewritten into ONNX Runtime's fused kernels (``modelbuild.kernels``) when
    its vectors, as the int8 form runs (without :data:`SKIPPED_FUSIONS`), then stay within
    :data:`FUSED_COSINE` of those of ``model`` on every calibration sentence, alone and in
    a padded batch; else ``model`` as it is, with a warning (slower, never wrong)."""
    from modelbuild import kernels

    candidate = type(model)()
    candidate.CopyFrom(model)
    try:
        done = kernels.fuse(candidate, heads=ATTENTION_HEADS)
        worst = _worst_cosine(model, candidate)
    except Exception as exc:  # onnx and onnxruntime raise their own types
        # Another export's graph the rewrites misread: slower unfused, never wrong.
        log.warning("the embedding graph could not be fused (%s): kept unfused", exc)
        return model
    if worst < FUSED_COSINE:
        log.warning("the fused embedding graph's vectors differ (cosine %.6f): kept unfused", worst)
        return model
    log.info("fused the embedding graph: %s (cosine %.6f at worst)", done, worst)
    return candidate


def calibration_texts() -> list[str]:
    return [line for line in CALIBRATION.read_text(encoding="utf-8").splitlines() if line.strip()]


def _worst_cosine(model: Any, other: Any) -> float:
    """The least cosine between the two graphs' mean-pooled vectors over the calibration
    sentences, each alone and all in one padded batch: ``model`` with all of ONNX
    Runtime's fusions, ``other`` as the int8 form runs."""
    import numpy

    from powercontext.embedding import wordpiece

    tokenizer = wordpiece.tokenizer()
    ids = [tokenizer.encode(text).ids for text in calibration_texts()]
    vectors = []
    for graph, skipped in ((model, ()), (other, SKIPPED_FUSIONS)):
        session = _session(graph, skipped)
        names = {
            "output_name": session.get_outputs()[0].name,
            "input_names": {item.name for item in session.get_inputs()},
        }
        alone = [wordpiece.pooled_vectors(session, [row], **names) for row in ids]
        vectors.append(numpy.vstack([*alone, wordpiece.pooled_vectors(session, ids, **names)]))
    return float(numpy.sum(vectors[0] * vectors[1], axis=1).min())


def _session(model: Any, skipped: tuple[str, ...] = ()) -> Any:
    """An ONNX Runtime session of ``model`` on one thread (the same sums every run),
    without the ``skipped`` fusions."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(
        model.SerializeToString(),
        sess_options=options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=list(skipped),
    )


def fix_activation_ranges(model: Any, figures: Figures, *, measure: bool = True) -> None:
    """Replace each per-call activation quantiser of ``model`` (``DynamicQuantizeLinear``:
    one scale from the call's own minimum and maximum) by a fixed one
    (``QuantizeLinear``) over the range the calibration sentences reach (``figures``;
    measured when missing and ``measure``), computed the way the per-call one computes it.
    A text's vector then no longer depends on the texts it is batched with, so the int8
    form runs batches; and one outlier token no longer coarsens a short text's every value
    (cosine 0.9963 at worst instead of 0.9975, but 0.9935 instead of 0.9915 on odd texts:
    one letter, emoji, Cyrillic, a log line)."""
    import numpy
    from onnx import helper, numpy_helper

    graph = model.graph
    quantisers = [node for node in graph.node if node.op_type == "DynamicQuantizeLinear"]
    inputs = [node.input[0] for node in quantisers]
    for name, (low, high) in _measured(model, inputs, figures.activation_ranges, measure).items():
        figures.activation_ranges[name] = (
            min(0.0, float(low.min())),
            max(0.0, float(high.max())),
        )
    nodes = []
    for node in graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            nodes.append(node)
            continue
        low, high = figures.activation_ranges[node.input[0]]
        scale = numpy.float32((high - low) / 255 if high > low else 1.0)
        zero = numpy.uint8(numpy.clip(numpy.rint(-low / scale), 0, 255))
        values, scale_name, zero_name = node.output
        graph.initializer.extend(
            [
                numpy_helper.from_array(numpy.array(scale, dtype=numpy.float32), scale_name),
                numpy_helper.from_array(numpy.array(zero, dtype=numpy.uint8), zero_name),
            ]
        )
        nodes.append(
            helper.make_node(
                "QuantizeLinear",
                [node.input[0], scale_name, zero_name],
                [values],
                f"{node.name}_fixed",
            )
        )
    del graph.node[:]
    graph.node.extend(nodes)


def smoothing_exponents(largest: Any, row_largest: Any) -> list[int]:
    """Each channel's smoothing factor as a power of two's exponent,
    round(a log2 max|X_j| - (1 - a) log2 max|W_j|) with a = :data:`SMOOTHING_STRENGTH`
    (0 where either is 0)."""
    import numpy

    exponents = numpy.zeros(largest.shape, dtype=numpy.float64)
    usable = (largest > 0) & (row_largest > 0)
    exponents[usable] = numpy.round(
        SMOOTHING_STRENGTH * numpy.log2(largest[usable].astype(numpy.float64))
        - (1 - SMOOTHING_STRENGTH) * numpy.log2(row_largest[usable].astype(numpy.float64))
    )
    return [int(value) for value in exponents]


def float_channels(largest: Any) -> list[int]:
    """The :data:`FLOAT_CHANNELS` channels of largest activations, in channel order."""
    import numpy

    return [
        int(value) for value in numpy.sort(numpy.argsort(-largest, kind="stable")[:FLOAT_CHANNELS])
    ]


def prepare(model: Any, shipped: Any, figures: Figures, *, measure: bool = True) -> list[str]:
    """Rewrite the folded float graph ``model`` in place so that quantising it loses
    little: smoothing, float channels (their ``figures``, measured when missing and
    ``measure``), embeddings as ``shipped`` stores them (the module's docstring says why).
    Returns the names of the matrix products to leave in float32."""
    import numpy
    from onnx import numpy_helper

    graph = model.graph
    weights = {item.name: item for item in graph.initializer}
    producers = {output: node for node in graph.node for output in node.output}
    products: dict[str, list[Any]] = {}
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights:
            products.setdefault(node.input[0], []).append(node)
    smoothed = [
        name
        for name in products
        if name in producers and producers[name].op_type == "LayerNormalization"
    ]
    # The feed-forward output product: the one that narrows (1,536 inputs to 384).
    narrowing = [
        name
        for name, users in products.items()
        if len(users) == 1
        and weights[users[0].input[1]].dims[0] > weights[users[0].input[1]].dims[1]
    ]
    if not smoothed or not narrowing:
        raise DerivationFailed("the folded model has no layer norm or feed-forward to prepare")
    known = {**figures.smoothing, **figures.float_channels}
    largest = {
        name: numpy.maximum(-low, high)
        for name, (low, high) in _measured(model, smoothed + narrowing, known, measure).items()
    }
    inserted: dict[str, list[Any]] = {}  # after the producer of the key
    kept_float: list[str] = []

    for name in smoothed:
        users = products[name]
        arrays = [numpy_helper.to_array(weights[user.input[1]]) for user in users]
        row_largest = numpy.max([numpy.abs(array).max(axis=1) for array in arrays], axis=0)
        if name in largest:
            figures.smoothing[name] = smoothing_exponents(largest[name], row_largest)
        exponents = numpy.array(figures.smoothing[name], dtype=numpy.float64)
        factors = numpy.exp2(exponents).astype(numpy.float32)
        smooth = f"smoothed_{name}"
        graph.initializer.append(
            numpy_helper.from_array((1 / factors).astype(numpy.float32), f"{smooth}_by")
        )
        inserted.setdefault(name, []).append(
            _node("Mul", [name, f"{smooth}_by"], [smooth], f"{smooth}_mul")
        )
        for user, array in zip(users, arrays, strict=True):
            scaled = (array * factors[:, None]).astype(numpy.float32)
            weights[user.input[1]].CopyFrom(numpy_helper.from_array(scaled, user.input[1]))
            user.input[0] = smooth

    for name in narrowing:
        (user,) = products[name]
        array = numpy_helper.to_array(weights[user.input[1]])
        if name in largest:
            figures.float_channels[name] = float_channels(largest[name])
        channels = numpy.array(figures.float_channels[name], dtype=numpy.int64)
        mask = numpy.ones(array.shape[0], dtype=numpy.float32)
        mask[channels] = 0
        rest = array.copy()
        rest[channels] = 0
        split = f"split_{name}"
        graph.initializer.extend(
            [
                numpy_helper.from_array(mask, f"{split}_mask"),
                numpy_helper.from_array(channels.astype(numpy.int64), f"{split}_channels"),
                numpy_helper.from_array(array[channels].copy(), f"{split}_float_weights"),
            ]
        )
        weights[user.input[1]].CopyFrom(numpy_helper.from_array(rest, user.input[1]))
        output = user.output[0]
        user.input[0], user.output[0] = f"{split}_rest", f"{split}_int8"
        inserted.setdefault(name, []).extend(
            [
                _node("Mul", [name, f"{split}_mask"], [f"{split}_rest"], f"{split}_mask"),
                _node(
                    "Gather", [name, f"{split}_channels"], [f"{split}_in"], f"{split}_in", axis=-1
                ),
                _node(
                    "MatMul",
                    [f"{split}_in", f"{split}_float_weights"],
                    [f"{split}_out"],
                    f"{split}_float",
                ),
            ]
        )
        inserted[f"{split}_int8"] = [
            _node("Add", [f"{split}_int8", f"{split}_out"], [output], f"{split}_sum")
        ]
        kept_float.append(f"{split}_float")

    _embeddings_as_shipped(graph, weights, shipped.graph, inserted)
    nodes = list(graph.node)
    del graph.node[:]
    for node in nodes:
        graph.node.append(node)
        for output in node.output:
            graph.node.extend(inserted.pop(output, []))
    return kept_float


def _embeddings_as_shipped(
    graph: Any, weights: dict[str, Any], shipped: Any, inserted: dict[str, list[Any]]
) -> None:
    """Look the embedding rows up in the shipped int8 tables and scale them per row, as the
    shipped graph does, instead of in the folded float32 tables (4 x larger): the same
    values, and the quantiser, which only quantises matrix products here, leaves them."""
    import numpy
    from onnx import numpy_helper

    stored = {item.name: item for item in shipped.initializer}
    for node in list(graph.node):
        table = node.input[0] if node.op_type == "Gather" else ""
        if table not in weights or f"{table}_q" not in stored or f"{table}_scale" not in stored:
            continue
        values = numpy_helper.to_array(stored[f"{table}_q"])
        scales = numpy_helper.to_array(stored[f"{table}_scale"])
        folded = numpy_helper.to_array(weights[table])
        if scales.shape != (values.shape[0], 1) or not numpy.array_equal(
            values.astype(numpy.float32) * scales, folded
        ):
            continue  # not the per-row form this expects: keep the float table
        rows = node.output[0]
        graph.initializer.remove(weights.pop(table))
        graph.initializer.extend([stored[f"{table}_q"], stored[f"{table}_scale"]])
        node.input[0], node.output[0] = f"{table}_q", f"{rows}_q"
        inserted.setdefault(rows + "_q", []).extend(
            [
                _node("Cast", [f"{rows}_q"], [f"{rows}_f"], f"{rows}_cast", to=FLOAT32),
                _node(
                    "Gather",
                    [f"{table}_scale", node.input[1]],
                    [f"{rows}_scale"],
                    f"{rows}_scale",
                ),
                _node("Mul", [f"{rows}_f", f"{rows}_scale"], [rows], f"{rows}_scaled"),
            ]
        )


def _node(kind: str, inputs: list[str], outputs: list[str], name: str, **attributes: Any) -> Any:
    from onnx import helper

    return helper.make_node(kind, inputs, outputs, name, **attributes)


def _measured(
    model: Any, tensors: list[str], known: Mapping[str, Any], measure: bool
) -> dict[str, tuple[Any, Any]]:
    """The calibrated ranges (:func:`_calibrated_ranges`) of the ``tensors`` whose figures
    are not ``known``, or, when not to ``measure``, an error naming them."""
    missing = [name for name in tensors if name not in known]
    if missing and not measure:
        raise DerivationFailed(
            f"{FIGURES.name} has no figures for {', '.join(missing[:3])}"
            f"{' ...' if len(missing) > 3 else ''}: it was measured on another graph; "
            "measure them again (python -m modelbuild --calibrate)"
        )
    return _calibrated_ranges(model, missing) if missing else {}


def _calibrated_ranges(model: Any, tensors: list[str]) -> dict[str, tuple[Any, Any]]:
    """Each channel's smallest and largest value in ``tensors`` over the calibration
    sentences, each run alone through ``model`` (one thread: the same sums every run)."""
    import numpy
    from onnx import TensorProto, helper

    from powercontext.embedding import wordpiece

    probe = type(model)()
    probe.CopyFrom(model)
    present = {output.name for output in probe.graph.output}
    probe.graph.output.extend(
        helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
        for name in tensors
        if name not in present
    )
    session = _session(probe)
    del probe
    # Tokenised as the runtime tokenises (a text's activations depend on it).
    tokenizer = wordpiece.tokenizer()
    inputs = {item.name for item in session.get_inputs()}
    ranges: dict[str, tuple[Any, Any]] = {}
    for line in calibration_texts():
        ids = numpy.array([tokenizer.encode(line).ids], dtype=numpy.int64)
        feeds = {"input_ids": ids, "attention_mask": numpy.ones_like(ids)}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = numpy.zeros_like(ids)
        for name, values in zip(tensors, session.run(tensors, feeds), strict=True):
            rows = values.reshape(-1, values.shape[-1])
            low, high = rows.min(axis=0), rows.max(axis=0)
            if name in ranges:
                low, high = (
                    numpy.minimum(ranges[name][0], low),
                    numpy.maximum(ranges[name][1], high),
                )
            ranges[name] = (low, high)
    return ranges
