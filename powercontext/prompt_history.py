"""The terms of a scope's recent prompts, read back from the source journal.

The hook captures every prompt (``powercontext.sources``); a Context Pack looks back on the
most recent ones to tell the user's recurring instructions from what this prompt asks
(``powercontext.search.policy.recurring_terms``). Read-only: it runs inside prepare's read
snapshot and writes nothing.
"""

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.db import connection

from powercontext import analyzer
from powercontext.models import SourceRecord
from powercontext.search.policy import PROMPT_HISTORY
from powercontext.sources import CONTENT_SOURCE

# The longest query prepare accepts. The hook sends a prompt's first QUERY_MAX_CHARS
# characters as the query and captures the whole prompt (DESIGN.md §7).
QUERY_MAX_CHARS = 8192


def recent_prompt_terms(*, scope_id: str, query: str) -> list[frozenset[str]]:
    """The analyzer terms of each of the scope's ``PROMPT_HISTORY`` most recent captured
    prompts (of their first ``QUERY_MAX_CHARS`` characters, all a query can hold), newest
    first, leaving out the prompt ``query`` was cut from.

    The hook captures a prompt while it prepares its pack, so that prompt may or may not be
    in the journal yet; a prompt repeated word for word is left out too (it says nothing
    about which of its words are boilerplate).
    """
    # Written as SQL: it runs on every prepare, and the ORM took several times longer to
    # build this statement than the index takes to answer it.
    table = connection.ops.quote_name(SourceRecord._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT payload_hash, payload FROM {table} "  # noqa: S608 - names and placeholders only
            "WHERE scope_id = %s AND source_type = %s ORDER BY position DESC LIMIT %s",
            # A few rows more than needed: some may be this very prompt.
            [scope_id, CONTENT_SOURCE, PROMPT_HISTORY + 2],
        )
        records = cursor.fetchall()
    prompts = []
    for payload_hash, payload in records:
        prompt = _prompt(payload_hash, payload)
        if prompt.is_cut_to(query):
            continue
        prompts.append(prompt.terms)
        if len(prompts) == PROMPT_HISTORY:
            break
    return prompts


@dataclass(frozen=True)
class _Prompt:
    """What prepare needs of one captured prompt: at most its first QUERY_MAX_CHARS
    characters (all a query can hold; a pasted log of 200,000 characters is not kept
    whole), its length, and the terms of that start."""

    start: str
    length: int
    terms: frozenset[str]

    def is_cut_to(self, query: str) -> bool:
        """True when ``query`` is this prompt, or its cut to the query limit."""
        if len(query) == QUERY_MAX_CHARS:
            return self.start == query
        return self.length == len(query) and self.start == query


# Captured payloads never change (a source id is bound to one payload hash), so each is
# decoded and analysed once per process, not on every prepare that looks back on it.
_CACHE_SIZE = 512
_cache: OrderedDict[str, _Prompt] = OrderedDict()
_cache_lock = threading.Lock()


def _prompt(payload_hash: str, payload: str) -> _Prompt:
    with _cache_lock:
        prompt = _cache.get(payload_hash)
        if prompt is not None:
            _cache.move_to_end(payload_hash)
            return prompt
    content = json.loads(payload)["content"]
    start = content[:QUERY_MAX_CHARS]
    prompt = _Prompt(start, len(content), frozenset(analyzer.tokens(start)))
    with _cache_lock:
        _cache[payload_hash] = prompt
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return prompt
