"""The embedding model in the form ONNX Runtime runs fast, derived once from the shipped file.

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
values get a handful of levels. Before quantising, the derivation therefore

- moves that difficulty from activations to weights (SmoothQuant, Xiao et al. 2023):
  a layer norm's output channel j is divided by s_j = sqrt(max|X_j| / max|W_j|) on its
  way into the products it feeds, and row j of their weights multiplied by it. s_j is
  rounded to a power of two, so both are exact in float32 and the graph computes what
  it computed before; max|X_j| comes from the vendored sentences of
  ``embedding_model/calibration.txt``, so two derivations give the same bytes;
- computes the feed-forward output's eight largest input channels (by the same
  calibration) in float32, beside the int8 product of the others (as LLM.int8() does);
- leaves the token and position embeddings as the shipped file stores them (int8 with a
  scale per row; the quantiser would give the whole table one scale);
- keeps weights in 7 bits on a CPU whose int8 products can saturate
  (:func:`products_can_saturate`): cosine 0.993 at worst instead of 0.996 on a CPU that
  cannot, but never an overflowed sum;

and after quantising fixes each product's activation range to the one the calibration
sentences reach (:func:`fix_activation_ranges`), so that a text's vector does not depend
on the texts batched with it. Against the shipped form's vectors, over 1,092 texts of the
dev sets: cosine 0.9963 at worst, 0.9990 at the median (0.9839 and 0.9938 before). Last,
it rewrites the graph into ONNX Runtime's fused kernels (``powercontext.model_fusion``:
the same values in fewer passes), kept only when its vectors match (:func:`fused`).

The derivation is deterministic, takes a few seconds, and is cached: one file per
shipped model, ONNX Runtime version, recipe and calibration text, in the user's cache
directory (``POWERCONTEXT_MODEL_CACHE`` overrides it). The file is written under a
temporary name and renamed into place, so a reader never sees half of it and two
processes deriving at once only do the work twice. Nothing is fetched: the inputs are
the installed files. docs/relevance.md has the figures.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import platformdirs

log = logging.getLogger(__name__)

# Names the steps below; change it whenever they change, so a cached file of the old
# recipe is never taken for the new one.
RECIPE: Final = (
    "ort-basic-fold+smooth-0.5-pow2+ffn-out-8-float+embeddings-as-shipped"
    "+int8-per-channel-matmul+calibrated-activation-ranges+fused-kernels-bias-gelu"
    "+no-skip-layer-norm/5"
)
# The sentences whose activations set the smoothing factors and the float channels:
# written for this purpose (code, chat, logs, a wrapped prompt), not taken from any data
# set the recall is measured on.
CALIBRATION: Final = Path(__file__).with_name("embedding_model") / "calibration.txt"
# SmoothQuant's migration strength: 0.5 splits the range evenly between activations and
# weights (with per-call ranges, 0.3 kept cosine 0.993 at worst, 0.7 0.996, 0.5 0.997).
SMOOTHING_STRENGTH: Final = 0.5
# Input channels of each feed-forward output product computed in float32 (8 of 1,536:
# 32 did no better).
FLOAT_CHANNELS: Final = 8
# What the recipe adds where int8 products could saturate (below): weights in 7 bits.
SEVEN_BIT_WEIGHTS: Final = "+7-bit-weights"
# x86-64 CPU flags (Linux's /proc/cpuinfo names) of the instructions that multiply u8 by
# s8 into 32-bit sums, which ONNX Runtime uses where the CPU has them.
WIDE_PRODUCT_FLAGS: Final = frozenset({"avx512_vnni", "avx_vnni"})
CPU_INFORMATION: Final = Path("/proc/cpuinfo")
FLOAT32: Final = 1  # onnx.TensorProto.FLOAT, without importing onnx at import time


# all-MiniLM-L6-v2's attention heads (model_fusion's MultiHeadAttention needs the number).
ATTENTION_HEADS: Final = 12
# The fused graph is kept only if its vectors are this close to the unfused one's on every
# calibration sentence. Its kernels round otherwise, which moves a vector by cosine 0.9985
# at worst (1,074 dev texts; 0.9990 on the calibration sentences); a rewrite that computes
# something else does not come near (attention in 6 or 24 heads instead of 12: 0.64, 0.76).
FUSED_COSINE: Final = 0.995
# ONNX Runtime fusions the derived form runs without (part of the recipe: the session
# options round too). SkipLayerNormalization, the residual Add and LayerNormalization in
# one kernel, was the slowest operator of the graph on the 2-core machine: the first 30
# bench prompts' segments took 22.4 ms a prompt on one thread without it, 27.9 with it,
# and the vectors are as close to the shipped form's either way (mean cosine 0.99893).
SKIPPED_FUSIONS: Final = ("SkipLayerNormFusion",)
# The operators of an int8 matrix product, unfused and fused.
INT8_PRODUCTS: Final = frozenset({"MatMulInteger", "MatMulIntegerToFloat"})

# A derivation takes seconds; its work directory this much older was abandoned.
ABANDONED_AFTER_SECONDS: Final = 3600


class DerivationFailed(RuntimeError):
    """The fast form of the model could not be derived (a package is missing, the disk is
    full or read-only, the shipped file is damaged)."""


def cache_directory() -> Path:
    """``POWERCONTEXT_MODEL_CACHE`` when set, else the platform's user cache directory
    for PowerContext (``~/.cache/powercontext/models`` on Linux)."""
    configured = os.environ.get("POWERCONTEXT_MODEL_CACHE", "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_cache_dir("powercontext")) / "models"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def products_can_saturate() -> bool:
    """True unless this CPU is known to sum int8 products without saturating.

    Without VNNI, ONNX Runtime's x86-64 kernels multiply an activation byte (u8) by a
    weight byte (s8) with VPMADDUBSW, which adds two products into 16 bits and clamps:
    two activations near 255 against two weights near 127 overflow. Its documentation
    recommends 7-bit weights there (``reduce_range``): 2 x 255 x 64 fits. Emulated over
    55 texts, the smoothed 8-bit form fell from cosine 0.998 to 0.992 at worst there.
    ARM64 and VNNI CPUs do not saturate. A CPU this cannot inspect (no /proc/cpuinfo:
    Windows, macOS on Intel) is taken to saturate: 7-bit weights are safe everywhere."""
    machine = platform.machine().lower()
    if machine in {"arm64", "aarch64"}:
        return False
    try:
        with CPU_INFORMATION.open(encoding="utf-8", errors="replace") as file:
            for line in file:
                if line.startswith("flags"):
                    return not WIDE_PRODUCT_FLAGS & set(line.split(":", 1)[-1].split())
    except OSError:
        pass
    return True


def recipe() -> str:
    """:data:`RECIPE`, with :data:`SEVEN_BIT_WEIGHTS` where products can saturate."""
    return RECIPE + (SEVEN_BIT_WEIGHTS if products_can_saturate() else "")


def cached_path(source: Path, directory: Path) -> Path:
    """Where the derived form of ``source`` lives: named by the shipped file's contents,
    the ONNX Runtime version (its folding and quantiser write the file), the recipe (with
    or without 7-bit weights) and the calibration text."""
    import onnxruntime

    key = hashlib.sha256(
        f"{sha256_of(source)}\n{onnxruntime.__version__}\n{recipe()}\n"
        f"{sha256_of(CALIBRATION)}".encode()
    ).hexdigest()
    return directory / f"{source.stem}-int8-{key[:16]}.onnx"


def quantized(source: Path, directory: Path | None = None) -> Path:
    """The derived form of ``source``, from the cache or derived into it now.

    Raises :class:`DerivationFailed` with the reason when it cannot be derived.
    """
    directory = cache_directory() if directory is None else directory
    target: Path | None = None
    try:
        target = cached_path(source, directory)
        if target.is_file():
            return target
        directory.mkdir(parents=True, exist_ok=True)
        _sweep_abandoned(directory)
        try:
            derive(source, target)
        finally:
            _release_memory()
    except ImportError as exc:
        raise DerivationFailed(f"{exc}: install the packages of requirements.txt") from exc
    except OSError as exc:
        if target is not None and target.is_file():
            return target  # another process renamed its copy into place first (Windows)
        raise DerivationFailed(
            f"cannot write the model's int8 form into {directory}: {exc}; free some space "
            "or set POWERCONTEXT_MODEL_CACHE to a writable directory"
        ) from exc
    return target


def _release_memory() -> None:
    """Give what the derivation allocated and freed back to the system: glibc's malloc
    keeps freed memory in its arenas, so a server that derived the model at its first start
    stayed at 388 MB resident, against 159 MB when it found the file cached. malloc_trim
    returns it (resident after a derivation: 248-299 MB without, 102 MB with it). Nothing
    is done where the C library has no malloc_trim (macOS, Windows, musl)."""
    import ctypes
    import gc

    gc.collect()
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def _sweep_abandoned(directory: Path) -> None:
    """Remove work directories of derivations killed midway (a process that exited
    while it derived leaves ~100 MB behind), once they are old enough to be nobody's."""
    cutoff = time.time() - ABANDONED_AFTER_SECONDS
    for work in directory.glob(".derive-*"):
        try:
            if work.stat().st_mtime < cutoff:
                shutil.rmtree(work, ignore_errors=True)
        except FileNotFoundError:
            pass  # another process swept it


def derive(source: Path, target: Path) -> None:
    """Pre-process ``source`` (constants folded, shapes inferred), prepare it (smoothing,
    float channels, embeddings as shipped), quantise its matrix products per channel, fix
    their activation ranges, check that it did, write ``target``."""
    import onnx
    import onnxruntime
    from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".derive-") as work:
        folded = Path(work) / "folded.onnx"
        prepared = Path(work) / "prepared.onnx"
        dynamic = Path(work) / "dynamic.onnx"
        written = Path(work) / "quantized.onnx"
        try:
            # Symbolic shape inference needs sympy and adds nothing for these fixed
            # shapes; the pre-processing's ONNX Runtime pass (basic level: folding and
            # dead nodes only, the same graph on any machine) is what turns the stored
            # int8 weights into the constants the quantiser reads.
            quant_pre_process(str(source), str(folded), skip_symbolic_shape=True)
            model = onnx.load(str(folded))
            kept_float = prepare(model, onnx.load(str(source)))
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
                reduce_range=products_can_saturate(),
            )
            model = onnx.load(str(dynamic))
            fix_activation_ranges(model)
            model = fused(model)
            # In the file, so that its digest (the model's identity, which the stored
            # vectors are recorded under) changes with anything that changes the vectors:
            # the recipe, which names the session's options too, and the runtime's kernels.
            for key, value in (
                ("powercontext.recipe", recipe()),
                ("onnxruntime", onnxruntime.__version__),
            ):
                entry = model.metadata_props.add()
                entry.key, entry.value = key, value
            onnx.save(model, str(written))
            kinds = {node.op_type for node in model.graph.node}
        except OSError:
            raise
        except DerivationFailed:
            raise
        except Exception as exc:  # onnx and onnxruntime raise their own types
            raise DerivationFailed(f"cannot derive the int8 form of {source}: {exc}") from exc
        # The pre-processing logs its failures instead of raising them; unfolded weights
        # would leave the matrix products in float32, as slow as the shipped file.
        if not kinds & INT8_PRODUCTS or "DynamicQuantizeLinear" in kinds:
            raise DerivationFailed(
                f"quantising {source} left no int8 matrix product with a fixed range"
            )
        with written.open("rb") as file:
            os.fsync(file.fileno())
        os.replace(written, target)
    log.info("derived the embedding model's int8 form: %s", target)


def fused(model: Any) -> Any:
    """``model`` rewritten into ONNX Runtime's fused kernels (``model_fusion``) when its
    vectors, as the derived form runs (without :data:`SKIPPED_FUSIONS`), then stay within
    :data:`FUSED_COSINE` of those of ``model`` on every calibration sentence, alone and in
    a padded batch; else ``model`` as it is, with a warning (slower, never wrong)."""
    from powercontext import model_fusion

    candidate = type(model)()
    candidate.CopyFrom(model)
    try:
        done = model_fusion.fuse(candidate, heads=ATTENTION_HEADS)
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


def _worst_cosine(model: Any, other: Any) -> float:
    """The least cosine between the two graphs' mean-pooled vectors over the calibration
    sentences, each alone and all in one padded batch: ``model`` with all of ONNX
    Runtime's fusions, ``other`` as the derived form runs."""
    import numpy

    from powercontext import embeddings

    texts = [line for line in CALIBRATION.read_text(encoding="utf-8").splitlines() if line.strip()]
    tokenizer = embeddings.wordpiece()
    ids = [tokenizer.encode(text).ids for text in texts]
    vectors = []
    for graph, skipped in ((model, ()), (other, SKIPPED_FUSIONS)):
        session = _session(graph, skipped)
        names = {
            "output_name": session.get_outputs()[0].name,
            "input_names": {item.name for item in session.get_inputs()},
        }
        alone = [embeddings.pooled_vectors(session, [row], **names) for row in ids]
        vectors.append(numpy.vstack([*alone, embeddings.pooled_vectors(session, ids, **names)]))
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


def fix_activation_ranges(model: Any) -> None:
    """Replace each per-call activation quantiser of ``model`` (``DynamicQuantizeLinear``:
    one scale from the call's own minimum and maximum) by a fixed one
    (``QuantizeLinear``) over the range the calibration sentences reach, computed the
    way the per-call one computes it. A text's vector then no longer depends on the
    texts it is batched with, so the int8 form runs batches; and one outlier token no
    longer coarsens a short text's every value (cosine 0.9963 at worst instead of 0.9975,
    but 0.9935 instead of 0.9915 on odd texts: one letter, emoji, Cyrillic, a log line)."""
    import numpy
    from onnx import helper, numpy_helper

    graph = model.graph
    quantisers = [node for node in graph.node if node.op_type == "DynamicQuantizeLinear"]
    ranges = _calibrated_ranges(model, [node.input[0] for node in quantisers])
    nodes = []
    for node in graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            nodes.append(node)
            continue
        low, high = ranges[node.input[0]]
        low, high = min(0.0, float(low.min())), max(0.0, float(high.max()))
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


def prepare(model: Any, shipped: Any) -> list[str]:
    """Rewrite the folded float graph ``model`` in place so that quantising it loses
    little: smoothing, float channels, embeddings as ``shipped`` stores them (the module's
    docstring says why). Returns the names of the matrix products to leave in float32."""
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
    largest = {
        name: numpy.maximum(-low, high)
        for name, (low, high) in _calibrated_ranges(model, smoothed + narrowing).items()
    }
    inserted: dict[str, list[Any]] = {}  # after the producer of the key
    kept_float: list[str] = []

    for name in smoothed:
        users = products[name]
        arrays = [numpy_helper.to_array(weights[user.input[1]]) for user in users]
        row_largest = numpy.max([numpy.abs(array).max(axis=1) for array in arrays], axis=0)
        factors = numpy.ones_like(row_largest)
        usable = (largest[name] > 0) & (row_largest > 0)
        factors[usable] = numpy.exp2(
            numpy.round(
                SMOOTHING_STRENGTH * numpy.log2(largest[name][usable])
                - (1 - SMOOTHING_STRENGTH) * numpy.log2(row_largest[usable])
            )
        )
        factors = factors.astype(numpy.float32)
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
        channels = numpy.sort(numpy.argsort(-largest[name], kind="stable")[:FLOAT_CHANNELS])
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


def _calibrated_ranges(model: Any, tensors: list[str]) -> dict[str, tuple[Any, Any]]:
    """Each channel's smallest and largest value in ``tensors`` over the calibration
    sentences, each run alone through ``model`` (one thread: the same sums every run)."""
    import numpy
    from onnx import TensorProto, helper

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
    from powercontext import embeddings

    # Tokenised as embeddings.Embedder tokenises (a text's activations depend on it).
    tokenizer = embeddings.wordpiece()
    inputs = {item.name for item in session.get_inputs()}
    ranges: dict[str, tuple[Any, Any]] = {}
    for line in CALIBRATION.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
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
