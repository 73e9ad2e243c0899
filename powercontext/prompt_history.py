"""The terms of a scope's recent prompts, read back from the source journal.

The hook captures every prompt (``powercontext.sources``); a Context Pack looks back on the
most recent ones to tell the user's recurring instructions from what this prompt asks
(``powercontext.search.policy.recurring_terms``). Read-only: it runs inside prepare's read
snapshot and writes nothing.
"""

import json
from functools import lru_cache

from powercontext import analyzer
from powercontext.models import SourceRecord
from powercontext.search.policy import PROMPT_HISTORY
from powercontext.sources import CONTENT_SOURCE

# The longest query prepare accepts. The hook sends a prompt's first QUERY_MAX_CHARS
# characters as the query and captures the whole prompt (DESIGN.md §7).
QUERY_MAX_CHARS = 8192


def recent_prompt_terms(*, scope_id: str, query: str) -> list[frozenset[str]]:
    """The analyzer terms of each of the scope's ``PROMPT_HISTORY`` most recent captured
    prompts, newest first, leaving out the prompt ``query`` was cut from.

    The hook captures a prompt while it prepares its pack, so that prompt may or may not be
    in the journal yet; a prompt repeated word for word is left out too (it says nothing
    about which of its words are boilerplate).
    """
    records = (
        SourceRecord.objects.filter(scope_id=scope_id, source_type=CONTENT_SOURCE)
        .order_by("-position")
        .values_list("payload_hash", "payload")
    )
    prompts = []
    # A few rows more than needed: some may be this very prompt.
    for payload_hash, payload in records[: PROMPT_HISTORY + 2]:
        content, terms = _decoded(payload_hash, payload)
        if _is_cut_from(query, content):
            continue
        prompts.append(terms)
        if len(prompts) == PROMPT_HISTORY:
            break
    return prompts


def _is_cut_from(query: str, content: str) -> bool:
    if len(query) == QUERY_MAX_CHARS:
        return content.startswith(query)
    return content == query


# Captured payloads never change (a source id is bound to one payload hash), so decoding
# and analysing each one once per process is enough: every prepare would otherwise
# re-analyse the same window of prompts of up to a few KiB each.
@lru_cache(maxsize=512)
def _decoded(payload_hash: str, payload: str) -> tuple[str, frozenset[str]]:
    content = json.loads(payload)["content"]
    return content, frozenset(analyzer.tokens(content))
