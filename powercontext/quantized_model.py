"""The embedding model in the form ONNX Runtime runs fast, derived once from the shipped file.

The shipped all-MiniLM-L6-v2 file stores its weights as int8 but turns them back into
float32 inside the graph (``Cast`` then ``Mul`` by a scale), so ONNX Runtime folds them
into float32 constants at load and runs float32 matrix products: the weights are int8
on disk only. Quantising the folded graph again, per output channel and with int8
matrix products (``onnxruntime.quantization.quantize_dynamic``, the runtime's own tool),
runs the same model about twice as fast in half the memory with the same recall
(docs/relevance.md has the figures).

The derivation is deterministic, takes about two seconds, and is cached: one file per
shipped model, ONNX Runtime version and recipe, in the user's cache directory
(``POWERCONTEXT_MODEL_CACHE`` overrides it). The file is written under a temporary name
and renamed into place, so a reader never sees half of it and two processes deriving at
once only do the work twice. Nothing is fetched: the inputs are the installed files.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Final

import platformdirs

log = logging.getLogger(__name__)

# Names the steps below; change it whenever they change, so a cached file of the old
# recipe is never taken for the new one.
RECIPE: Final = "ort-basic-fold+dynamic-int8-per-channel/1"


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


def cached_path(source: Path, directory: Path) -> Path:
    """Where the derived form of ``source`` lives: named by the shipped file's contents,
    the ONNX Runtime version (its folding and quantiser write the file) and the recipe."""
    import onnxruntime

    key = hashlib.sha256(
        f"{sha256_of(source)}\n{onnxruntime.__version__}\n{RECIPE}".encode()
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
        derive(source, target)
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
    """Pre-process ``source`` (constants folded, shapes inferred), quantise its matrix
    products per channel, check that it did, write ``target``."""
    import onnx
    from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".derive-") as work:
        folded = Path(work) / "folded.onnx"
        written = Path(work) / "quantized.onnx"
        try:
            # Symbolic shape inference needs sympy and adds nothing for these fixed
            # shapes; the pre-processing's ONNX Runtime pass (basic level: folding and
            # dead nodes only, the same graph on any machine) is what turns the stored
            # int8 weights into the constants the quantiser reads.
            quant_pre_process(str(source), str(folded), skip_symbolic_shape=True)
            quantize_dynamic(folded, written, weight_type=QuantType.QInt8, per_channel=True)
            kinds = {node.op_type for node in onnx.load(str(written)).graph.node}
        except OSError:
            raise
        except Exception as exc:  # onnx and onnxruntime raise their own types
            raise DerivationFailed(f"cannot derive the int8 form of {source}: {exc}") from exc
        # The pre-processing logs its failures instead of raising them; unfolded weights
        # would leave the matrix products in float32, as slow as the shipped file.
        if "MatMulInteger" not in kinds and "DynamicQuantizeMatMul" not in kinds:
            raise DerivationFailed(f"quantising {source} left no int8 matrix product")
        with written.open("rb") as file:
            os.fsync(file.fileno())
        os.replace(written, target)
    log.info("derived the embedding model's int8 form: %s", target)
