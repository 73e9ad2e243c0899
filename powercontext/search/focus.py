"""Late interaction: how much of a prompt a candidate speaks to, token by token.

A pooled embedding puts an entry on the prompt's subject as near as an entry that answers
it. Comparing their tokens tells them apart: a candidate's *focus* on a prompt segment is
the mean, over the segment's content tokens, of each token's best cosine to the
candidate's tokens (ColBERT's MaxSim, read as a recall: how much of the segment it
covers). ``relevance.off_focus`` compares a candidate with the best on the segment it
speaks to most (docs/relevance.md, the relevance decision).

The token states come from the model run that embeds a text anyway (a prompt's segments,
an entry being indexed: ``Embedder.embed_with_tokens``) and are kept in this process, by
the model's identity and a digest of the text (never the text itself), within
:data:`KEPT_BYTES`, the least recently used going first. A text not kept is embedded
again when asked for: after a restart, a prepare embeds its window's candidates once.
"""

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from powercontext import embedding as embeddings
from powercontext.embedding import TokenStates

# The content rows kept: about 25 KB per coding-memory entry (some 30 content tokens of
# 384 float16 values), so some 2,500 entries and the prompts' segments.
KEPT_BYTES = 64 * 1024 * 1024
# Function words carry no subject: a segment's "how do I" matches every entry's "how".
FUNCTION_WORDS = frozenset(
    """a an the of to in on for and or is are was were be been do does did how what when
    where who whom why which i we you he she they it its my our your his her their me us
    them can could should would will with at by from this that these those as have has had
    there any not no so if but about into than then also just""".split()
)

_lock = threading.Lock()
# The content rows (``content``) of each kept text, float16, by model identity and digest.
_kept: "OrderedDict[tuple[str, bytes], Any]" = OrderedDict()
_kept_bytes = 0


def _key(identity: str, text: str) -> tuple[str, bytes]:
    return identity, hashlib.sha256(text.encode("utf-8")).digest()


def content(states: TokenStates) -> Any:
    """The rows of ``states`` that carry a subject: not a function word."""
    rows = [at for at, token in enumerate(states.tokens) if token not in FUNCTION_WORDS]
    return states.states[rows]


def keep(identity: str, texts: Sequence[str], states: Sequence[TokenStates]) -> None:
    """Keep the content rows of ``states``, the token states of ``texts`` the model
    ``identity`` gave."""
    global _kept_bytes
    with _lock:
        for text, state in zip(texts, states, strict=True):
            key = _key(identity, text)
            if key in _kept:
                _kept.move_to_end(key)
                continue
            rows = content(state)
            _kept[key] = rows
            _kept_bytes += rows.nbytes
        while _kept_bytes > KEPT_BYTES and _kept:
            _kept_bytes -= _kept.popitem(last=False)[1].nbytes


def forget() -> None:
    """Drop every kept state (tests, benchmarks measuring the cold cost)."""
    global _kept_bytes
    with _lock:
        _kept.clear()
        _kept_bytes = 0


def rows_for(texts: Sequence[str]) -> list[Any] | None:
    """The content rows of ``texts`` (float32): the kept ones, the others embedded in one
    call (and kept). None when the channel cannot embed (switched off, no model)."""
    if not embeddings.enabled():
        return None
    try:
        model = embeddings.embedder()
        found: dict[str, Any] = {}
        with _lock:
            for text in texts:
                key = _key(model.identity, text)
                if key in _kept:
                    _kept.move_to_end(key)
                    found[text] = _kept[key]
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            _, states = model.embed_with_tokens(missing)
            keep(model.identity, missing, states)
            found.update(
                (text, content(state)) for text, state in zip(missing, states, strict=True)
            )
    except embeddings.EmbeddingsUnavailable:
        return None
    # Products of float16 rows run without BLAS.
    return [found[text].astype("float32") for text in texts]


def matches(segments: Sequence[Any], candidate: Any) -> list[Any]:
    """For each of a prompt's segments, given as their content rows (:func:`rows_for`),
    the best cosine of each of its tokens to the ``candidate``'s content rows (zeros when
    the candidate has none). Their mean is the candidate's focus on the segment. One
    product for all the segments: a long prompt has twenty."""
    import numpy

    if not segments:
        return []
    rows = numpy.concatenate(list(segments))
    if not len(candidate) or not len(rows):
        best = numpy.zeros(len(rows), dtype=numpy.float32)
    else:
        best = (rows @ candidate.T).max(axis=1)
    ends = numpy.cumsum([len(segment) for segment in segments])[:-1]
    return list(numpy.split(best, ends))
