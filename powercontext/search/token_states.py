"""The token states a model run gives, kept for the focus of later prompts.

The relevance decision's focus rule (``powercontext.search.relevance.focus``) compares a
prompt's segments with its candidates token by token. The token states come from the
model run that embeds a text anyway, and exactly two places keep them here, each when it
embeds: the semantic channel embedding a prompt's segments
(``powercontext.search.hybrid.query_vectors``) and a write embedding the entries it
indexes (``powercontext.search.vectors.writes.embed_for``). The focus rule reads them
with :func:`rows_for`, which embeds (and keeps) a text not kept.

They are kept in this process, by the model's identity and a digest of the text (never
the text itself), within :data:`KEPT_BYTES`, the least recently used going first: after
a restart, a prepare embeds its window's candidates once.
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
            rows.flags.writeable = False  # shared with every later prompt that reads it
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
    """The content rows of ``texts`` as kept (float16, read-only: widen them before a
    product, as ``relevance.focus.matches_all`` does once for all of them): the kept ones,
    the others embedded in one call (and kept). None when the channel cannot embed
    (switched off, no model)."""
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
    return [found[text] for text in texts]
