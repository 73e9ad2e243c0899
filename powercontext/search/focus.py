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

# The token states kept: about 30 KB per coding-memory entry (40 tokens of 384 float16),
# so some 2,000 entries and the prompts' segments.
KEPT_BYTES = 64 * 1024 * 1024
# Function words carry no subject: a segment's "how do I" matches every entry's "how".
FUNCTION_WORDS = frozenset(
    """a an the of to in on for and or is are was were be been do does did how what when
    where who whom why which i we you he she they it its my our your his her their me us
    them can could should would will with at by from this that these those as have has had
    there any not no so if but about into than then also just""".split()
)

_lock = threading.Lock()
_kept: "OrderedDict[tuple[str, bytes], TokenStates]" = OrderedDict()
_kept_bytes = 0


def _key(identity: str, text: str) -> tuple[str, bytes]:
    return identity, hashlib.sha256(text.encode("utf-8")).digest()


def keep(identity: str, texts: Sequence[str], states: Sequence[TokenStates]) -> None:
    """Keep the token states ``states`` of ``texts``, embedded by the model ``identity``."""
    global _kept_bytes
    with _lock:
        for text, state in zip(texts, states, strict=True):
            key = _key(identity, text)
            if key in _kept:
                _kept.move_to_end(key)
                continue
            _kept[key] = state
            _kept_bytes += state.states.nbytes
        while _kept_bytes > KEPT_BYTES and _kept:
            _kept_bytes -= _kept.popitem(last=False)[1].states.nbytes


def forget() -> None:
    """Drop every kept state (tests, benchmarks measuring the cold cost)."""
    global _kept_bytes
    with _lock:
        _kept.clear()
        _kept_bytes = 0


def states_for(texts: Sequence[str]) -> list[TokenStates] | None:
    """The token states of ``texts``: the kept ones, the others embedded in one call (and
    kept). None when the channel cannot embed (switched off, no model)."""
    if not embeddings.enabled():
        return None
    try:
        model = embeddings.embedder()
        with _lock:
            found: dict[str, TokenStates] = {}
            for text in texts:
                key = _key(model.identity, text)
                if key in _kept:
                    _kept.move_to_end(key)
                    found[text] = _kept[key]
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            _, states = model.embed_with_tokens(missing)
            keep(model.identity, missing, states)
            found.update(zip(missing, states, strict=True))
    except embeddings.EmbeddingsUnavailable:
        return None
    return [found[text] for text in texts]


def content(states: TokenStates) -> Any:
    """The rows of ``states`` that carry a subject (not a function word), as float32 (the
    products of float16 rows run without BLAS)."""
    rows = [at for at, token in enumerate(states.tokens) if token not in FUNCTION_WORDS]
    return states.states[rows].astype("float32")


def matches(segments: Sequence[Any], candidate: TokenStates) -> list[Any]:
    """For each of a prompt's segments, given as their content rows (:func:`content`), the
    best cosine of each of its tokens to ``candidate``'s content tokens (zeros when the
    candidate has none). Their mean is the candidate's focus on the segment."""
    tokens = content(candidate)
    return [
        (segment @ tokens.T).max(axis=1) if len(tokens) else segment[:, 0] * 0.0
        for segment in segments
    ]
