"""A scope's vectors as SQLite's vector engine (``vector_sqlite``) reads them: each
vector's 2-bit code, a ``vec0`` chunk's slots as stored, a scope's slots laid out for the
code pass and the pass itself, and the float vectors that rescore its candidates (checked
for damage; a small scope's kept with its slots). Pure: numpy over what was read."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# The code's middle level (see :func:`code`; chosen on real embeddings,
# docs/relevance-history.md).
LEVEL = 0.45


@dataclass(frozen=True)
class Floats:
    """A small scope's float vectors as rescoring reads them (kept with its slots, up to
    ``vector_sqlite.FLOATS_KEPT_ROWS``): the row keys in order, their vectors one row each (the
    damaged left out), and each one's cited id and version."""

    keys: np.ndarray
    matrix: np.ndarray
    cited: dict[int, tuple[str, str]]

    def of(self, candidates: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The row keys and vectors of the ``candidates`` there are vectors of."""
        if not len(self.keys):
            return self.keys, self.matrix
        wanted = np.asarray(candidates, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        at = at[self.keys[at] == wanted]
        return self.keys[at], self.matrix[at]

    @property
    def nbytes(self) -> int:
        # A cited id and version: two short strings and their tuple, about 200 bytes.
        return self.keys.nbytes + self.matrix.nbytes + 200 * len(self.cited)


@dataclass(frozen=True)
class Slots:
    """A scope's chunk slots as the code pass reads them: each slot's row key, whether
    it holds a vector (and how many do), and the codes word by word (row w holds every
    slot's w-th word, contiguous: the pass goes a word at a time over every slot); and
    a small scope's float vectors (:class:`Floats`), or None."""

    keys: np.ndarray
    valid: np.ndarray
    count: int
    columns: np.ndarray
    floats: Floats | None = None

    @property
    def nbytes(self) -> int:
        kept = 0 if self.floats is None else self.floats.nbytes
        return self.keys.nbytes + self.valid.nbytes + self.columns.nbytes + kept


def code(vector: Any) -> np.ndarray:
    """The vector's 2-bit code, as packed bits (least significant first in each byte, as
    sqlite-vec packs them): each value is one of three levels (below -t, within t of 0,
    above t; t = :data:`LEVEL` / sqrt(dimension), a fraction of a unit vector's typical
    value), written as two bits (above -t, above t), so the Hamming distance between two
    codes is the sum of their level differences."""
    values = np.asarray(vector, dtype=np.float32)
    step = LEVEL / np.sqrt(values.size)
    return np.packbits(np.concatenate([values > -step, values > step]), bitorder="little")


def codes(matrix: np.ndarray) -> np.ndarray:
    """:func:`code` of each row of ``matrix``, one row of packed bits each."""
    step = LEVEL / np.sqrt(matrix.shape[1])
    bits = np.concatenate([matrix > -step, matrix > step], axis=1)
    return np.packbits(bits, axis=1, bitorder="little")


def float_problem(blob: Any, dimension: int) -> str | None:
    """What is wrong with a stored float vector (the ``embedding`` auxiliary column), or
    None: it must be ``dimension`` float32 values, finite and not all zero (the model's
    vectors have length 1)."""
    if not isinstance(blob, bytes) or len(blob) != 4 * dimension:
        size = len(blob) if isinstance(blob, bytes) else type(blob).__name__
        return f"its float vector is {size} bytes, not {4 * dimension}"
    values = np.frombuffer(blob, dtype=np.float32)
    if not np.isfinite(values).all():
        return "its float vector holds values that are not finite"
    if not values.any():
        return "its float vector is all zeros"
    return None


def float_matrix(
    stored: Sequence[Any], dimension: int
) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """The row keys and float vectors (one row each) of ``stored`` ((row key, blob)
    pairs), and {row key: problem} of the ones left out (:func:`float_problem`). Checked
    for the whole matrix at once: a search reads a thousand candidates."""
    size = 4 * dimension
    damaged = {
        int(key): float_problem(blob, dimension) or ""
        for key, blob in stored
        if not isinstance(blob, bytes) or len(blob) != size
    }
    kept = [row for row in stored if int(row[0]) not in damaged] if damaged else stored
    keys = np.fromiter((row[0] for row in kept), dtype=np.int64, count=len(kept))
    matrix = np.frombuffer(b"".join(row[1] for row in kept), dtype=np.float32)
    matrix = matrix.reshape(len(kept), dimension)
    bad = ~(np.isfinite(matrix).all(axis=1) & matrix.any(axis=1))
    if bad.any():
        for at in np.flatnonzero(bad).tolist():
            damaged[int(keys[at])] = float_problem(kept[at][1], dimension) or ""
        keys, matrix = keys[~bad], matrix[~bad]
    return keys, matrix, damaged


def chunk_slots(
    size: int, validity: bytes, rowids: bytes, code_blob: bytes, code_bytes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One chunk's slots as read (row keys, which hold a vector, codes); ValueError when
    its blobs are not the sizes ``size`` slots take (the storage is damaged)."""
    if (len(validity), len(rowids), len(code_blob)) != (
        (size + 7) // 8,
        8 * size,
        code_bytes * size,
    ):
        raise ValueError(
            f"a chunk of {size} slots holds {len(validity)} validity, {len(rowids)} row id "
            f"and {len(code_blob)} code bytes"
        )
    keys = np.frombuffer(rowids, dtype="<i8")
    valid = valid_slots(validity, size)
    return keys, valid, np.frombuffer(code_blob, dtype=np.uint8).reshape(size, code_bytes)


def valid_slots(validity: bytes, slots: int) -> np.ndarray:
    """Which of a scope's chunk slots hold a vector: the chunks' validity bitmaps end to
    end (least significant bit first), as booleans."""
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    return bits[:slots].astype(bool)


def slots_of(keys: np.ndarray, valid: np.ndarray, stored: np.ndarray) -> Slots:
    """The slots of a scope as read (one row of ``stored`` codes a slot), for the code
    pass. Read-only: they may be kept and shared between threads."""
    # 64-bit words where the code has whole ones (768 bits: 12), else bytes.
    word = np.dtype("<u8") if stored.shape[1] % 8 == 0 else np.dtype(np.uint8)
    columns = np.ascontiguousarray(np.ascontiguousarray(stored).view(word).T)
    for array in (keys, valid, columns):
        array.flags.writeable = False
    return Slots(keys, valid, int(valid.sum()), columns)


# Slots compared at a time by the code pass, times the vectors compared with them: the
# pass's buffers (a 64-bit word per slot and vector, 512 KB) stay in the processor's
# cache.
PASS_BLOCK = 2**16


def nearest_by_code(slots: Slots, vectors: Sequence[Any], k: int) -> list[int]:
    """The row keys of the ``k`` slots whose codes are nearest by Hamming distance to
    the code of any of ``vectors`` (a slot's distance is to the code it is nearest to),
    nearest first, ties by row key (``vector_sqlite.SqliteVectors.code_nearest``)."""
    keys, columns = slots.keys, slots.columns
    if not len(keys) or not len(vectors):
        return []
    queries = np.stack([code(vector) for vector in vectors])
    farthest = 8 * queries.shape[1] + 1
    # A block of slots at a time, word by word (a column is contiguous), every query at
    # once, into buffers made once, counted in 16 bits where they fit. At 100,000 slots
    # of the 384-dimension model and 8 queries: 7.5 ms, where a pass over every slot for
    # each query and word into such buffers cost 8.1, and with fresh 32-bit arrays, 12.
    counts = np.uint16 if farthest <= np.iinfo(np.uint16).max else np.int32
    parts = queries.view(columns.dtype).T  # row w: every query's w-th word
    block = max(1024, PASS_BLOCK // len(queries))
    differ = np.empty((len(queries), block), dtype=columns.dtype)
    bits = np.empty((len(queries), block), dtype=np.uint8)
    apart = np.empty((len(queries), block), dtype=counts)
    distances = np.empty(len(keys), dtype=counts)
    for start in range(0, len(keys), block):
        end = min(len(keys), start + block)
        width = end - start
        differ_now, bits_now, apart_now = differ[:, :width], bits[:, :width], apart[:, :width]
        apart_now[:] = 0
        for column, part in zip(columns[:, start:end], parts, strict=True):
            np.bitwise_xor(column[None, :], part[:, None], out=differ_now)
            np.bitwise_count(differ_now, out=bits_now)
            np.add(apart_now, bits_now, out=apart_now)
        # A slot's distance is to the query it is nearest to.
        np.min(apart_now, axis=0, out=distances[start:end])
    # An empty slot (a deleted or never used one) is farther than any vector.
    distances[~slots.valid] = farthest
    count = min(k, slots.count)
    if count == 0:
        return []
    # Only the slots within the count-th distance are sorted (a partition is linear).
    within = distances <= np.partition(distances, count - 1)[count - 1]
    keys, distances = keys[within], distances[within]
    order = np.lexsort((keys, distances))[:count]
    return [int(key) for key in keys[order]]
