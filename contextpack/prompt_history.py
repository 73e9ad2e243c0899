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

from contextpack.limits import QUERY_MAX_CHARS
from powercontext.models import SourceRecord
from powercontext.search import Query
from powercontext.sources import CONTENT_SOURCE


def recent_prompt_terms(*, scope_id: str, query: str) -> list[frozenset[str]]:
    """The analyzer terms of each of the scope's ``Query.HISTORY`` most recent captured
    prompts (of their first ``QUERY_MAX_CHARS`` characters, all a query can hold), newest
    first, leaving out the prompt ``query`` was cut from.

    The hook captures a prompt while it prepares its pack, so that prompt may or may not be
    in the journal yet; a prompt repeated word for word is left out too (it says nothing
    about which of its words are boilerplate).
    """
    # Written as SQL: it runs on every prepare, and the ORM took several times longer to
    # build these statements than the index takes to answer them.
    table = connection.ops.quote_name(SourceRecord._meta.db_table)
    # A purged prompt (no payload, no payload_hash: ``powercontext.sources``) says nothing.
    where = "WHERE scope_id = %s AND source_type = %s AND payload_hash <> ''"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT position, payload_hash FROM {table} {where} "  # noqa: S608 - names and placeholders only
            "ORDER BY position DESC LIMIT %s",
            # A few rows more than needed: some may be this very prompt.
            [scope_id, CONTENT_SOURCE, Query.HISTORY + 2],
        )
        recent = cursor.fetchall()
        known = {payload_hash: _cached(payload_hash) for _, payload_hash in recent}
        # Payloads (up to 200,000 characters each) are read only for the prompts this
        # process has not analysed yet: usually the one captured since the last prepare.
        unseen = [position for position, payload_hash in recent if known[payload_hash] is None]
        if unseen:
            cursor.execute(
                f"SELECT payload_hash, payload FROM {table} {where} "  # noqa: S608 - names and placeholders only
                f"AND position IN ({', '.join(['%s'] * len(unseen))})",
                [scope_id, CONTENT_SOURCE, *unseen],
            )
            for payload_hash, payload in cursor.fetchall():
                known[payload_hash] = _analysed(payload_hash, payload)
    prompts = []
    for _, payload_hash in recent:
        prompt = known[payload_hash]  # every unseen payload was read just above
        if prompt is None or prompt.start == query:  # this prompt, or its cut to the limit
            continue
        prompts.append(prompt.terms)
        if len(prompts) == Query.HISTORY:
            break
    return prompts


@dataclass(frozen=True)
class _Prompt:
    """What prepare needs of one captured prompt: its first QUERY_MAX_CHARS characters
    (all a query can hold; a pasted log of 200,000 characters is not kept whole) and their
    terms. A query equal to ``start`` is this prompt, or this prompt cut to the limit."""

    start: str
    terms: frozenset[str]


# Captured payloads never change (a source id is bound to one payload hash), so each is
# decoded and analysed once per process, not on every prepare that looks back on it.
_CACHE_SIZE = 512
_cache: OrderedDict[str, _Prompt] = OrderedDict()
_cache_lock = threading.Lock()


def _cached(payload_hash: str) -> _Prompt | None:
    with _cache_lock:
        prompt = _cache.get(payload_hash)
        if prompt is not None:
            _cache.move_to_end(payload_hash)
        return prompt


def _analysed(payload_hash: str, payload: str) -> _Prompt:
    start = json.loads(payload)["content"][:QUERY_MAX_CHARS]
    prompt = _Prompt(start, Query.prompt_terms(start))
    with _cache_lock:
        _cache[payload_hash] = prompt
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return prompt
