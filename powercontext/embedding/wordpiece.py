"""Text in, vectors out around the model: its WordPiece tokenizer and its pooling.

Shared by the runtime (``powercontext.embedding.model``) and the model's build
(``modelbuild``), whose calibration must tokenise exactly as the runtime does.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np

# The vendored vocabulary (bert-base-uncased's, as all-MiniLM-L6-v2 ships it).
VOCABULARY: Final = Path(__file__).with_name("files") / "vocab.txt"
# sentence-transformers' max_seq_length for this model; longer text is cut (the start of
# an entry or a prompt is what it is about more often than its end).
MAX_TOKENS: Final = 256


def vocabulary_of(text: str) -> dict[str, int]:
    """A vocabulary file's text as token -> id (the id is the line's number), as the
    tokenizer reads the file itself."""
    return {token: index for index, token in enumerate(text.splitlines())}


def tokenizer(
    vocabulary: Mapping[str, int] | Path = VOCABULARY, max_tokens: int = MAX_TOKENS
) -> Any:
    """BERT's uncased WordPiece, as the model's tokenizer.json configures it: lower-casing
    with accents stripped, CJK characters split, [CLS] ... [SEP], cut at ``max_tokens``.
    ``vocabulary`` is a vocabulary file or its tokens (:func:`vocabulary_of`)."""
    from tokenizers import BertWordPieceTokenizer

    wordpiece = BertWordPieceTokenizer(
        str(vocabulary) if isinstance(vocabulary, Path) else dict(vocabulary),
        lowercase=True,
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=None,
    )
    wordpiece.enable_truncation(max_length=max_tokens)
    return wordpiece


def hidden_states(
    session: Any, ids: list[list[int]], *, output_name: str, input_names: Collection[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The texts' token ids (``ids``, padded to the longest) run through ``session``: the
    last hidden states, ``(texts, tokens, dimension)``, and the attention mask (1 on each
    text's real tokens)."""
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
    return hidden, mask


def pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Hidden states mean-pooled over each text's real tokens (sentence-transformers'
    pooling for this model) and L2-normalised: float32, one row per text."""
    import numpy

    weights = mask[:, :, None].astype(numpy.float32)
    summed = (hidden * weights).sum(axis=1) / numpy.maximum(weights.sum(axis=1), 1e-9)
    norms = numpy.linalg.norm(summed, axis=1, keepdims=True)
    result: np.ndarray = (summed / numpy.maximum(norms, 1e-12)).astype(numpy.float32)
    return result


def pooled_vectors(
    session: Any, ids: list[list[int]], *, output_name: str, input_names: Collection[str]
) -> np.ndarray:
    """The texts' token ids (``ids``, padded to the longest) run through ``session``, each
    mean-pooled over its real tokens and L2-normalised (:func:`pooled`): float32, one row
    per text."""
    return pooled(*hidden_states(session, ids, output_name=output_name, input_names=input_names))
