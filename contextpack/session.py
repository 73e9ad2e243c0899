"""``session_context``: the small Context Pack a new session starts with.

A ``SessionStart`` hook has no prompt to search for, so this pack is chosen by what a new
session most needs before the first prompt, in this order of priority:

- **Standing instructions a reviewer chose**: the scope's active Memory entries that a
  reviewer marked for session start on the desk (``memory.SessionStartMark``, who and
  when), each in the very version marked, the most recently marked first. They are what
  an AGENTS.md / CLAUDE.md holds, and they reach every session's start with no prompt
  to match, so an agent's write alone never puts an entry there: the newest entries of
  a kind did, unchecked, until issue 38 (one planted ``command`` entry was in 10 of 10
  packs).
- **Where the work is**: the entries that best match the subjects of the scope's most
  recent captured prompts, each prompt scored on its own (``segments``), with the words
  the user repeats in every prompt weighing less (``recurring_terms``): a session that
  resumes the work gets the facts it was using.
- **One lesson**: the most recently approved Experience.

Memory items go in turn (a marked entry, a subject, then the next of each) so that a
budget of a few items holds some of each; the builder keeps what fits.

The same ``powercontext.prepared-context.v1`` value as prepare, from the same pure builder
(trust wrapper, citations, truncation, byte budget), from the families' own selectors.
It records nothing: no capture, no write, no cursor (like prepare).
"""

from contextpack.builder import (
    ExperienceHit,
    HeadMismatchError,
    MemoryCitation,
    MemoryHit,
    PreparedContext,
    PreparedContextBuilder,
)
from contextpack.limits import SESSION_DEFAULT_MAX_BYTES
from contextpack.prompt_history import recent_prompt_terms
from experience.selectors import experience_latest
from memory.selectors import memory_head, memory_search_at, memory_session_entries
from memory.values import memory_ref
from powercontext.search import Query, SearchInconsistent
from powercontext.snapshot import read_snapshot

# The entries marked for session start, the most recently marked first.
MARKED_ENTRIES = 6
# The prompts whose subjects are looked for, most recent first, and how many entries.
SUBJECT_PROMPTS = 3
SUBJECT_ENTRIES = 3
SUBJECT_MAX_TERMS = 256
EXPERIENCES = 1

EMPTY = PreparedContext(status="empty", content=None, content_bytes=0)
_BUILDER = PreparedContextBuilder()


def session_context(
    *, scope_id: str, max_bytes: int = SESSION_DEFAULT_MAX_BYTES
) -> PreparedContext:
    """The pack a session of ``scope_id`` starts with (``empty`` when the scope has none).

    Raises ``powercontext.search.SearchInconsistent`` when a hit cites a revision other
    than the head read; no partial pack is returned. Writes nothing.
    """
    with read_snapshot():
        head = memory_head(scope_id=scope_id)
        marked = [
            _hit(head, entry.citation.entry_id, entry.citation.entry_version_id, entry.text)
            for entry in memory_session_entries(
                scope_id=scope_id, revision=head, limit=MARKED_ENTRIES
            )
        ]
        taken = {hit.citation.entry_id for hit in marked}
        subjects = _subject_hits(scope_id, head, taken)
        experience_hits = [
            ExperienceHit(hit.artifact_ref, hit.situation, hit.action, hit.outcome, hit.lesson)
            for hit in experience_latest(scope_id=scope_id, limit=EXPERIENCES)
        ]
    # One of each in turn (a marked entry, a subject, then the next of each), so the
    # budget holds some of both rather than all of the first.
    lists = [marked, subjects]
    memory_hits = [
        hits[index] for index in range(max(map(len, lists))) for hits in lists if index < len(hits)
    ]
    if not memory_hits and not experience_hits:
        return EMPTY
    try:
        return _BUILDER.build(
            head=memory_ref(head),
            memory_hits=memory_hits,
            experience_hits=experience_hits,
            max_bytes=max_bytes,
        )
    except HeadMismatchError as error:  # the index disagrees with the head, as prepare says
        raise SearchInconsistent() from error


def _hit(revision: int, entry_id: str, entry_version_id: str, text: str) -> MemoryHit:
    return MemoryHit(MemoryCitation(memory_ref(revision), entry_id, entry_version_id), text)


def _subject_hits(scope_id: str, head: int, taken: set[str]) -> list[MemoryHit]:
    """The entries matching the subjects of the most recent prompts, none of ``taken``."""
    prompts = recent_prompt_terms(scope_id=scope_id, query="")
    recent = prompts[:SUBJECT_PROMPTS]
    if head == 0 or not recent:
        return []
    terms: list[str] = []
    for prompt in recent:  # the most recent prompt's words first, up to the cap
        terms += sorted(prompt.difference(terms))
    terms = terms[:SUBJECT_MAX_TERMS]
    subjects = Query.subjects(
        terms, history=prompts, segments=[sorted(prompt) for prompt in recent]
    )
    found = memory_search_at(
        scope_id=scope_id, head=head, query=subjects, limit=SUBJECT_ENTRIES + len(taken)
    )
    hits = [
        _hit(hit.revision, hit.entry_id, hit.entry_version_id, hit.text)
        for hit in found
        if hit.entry_id not in taken
    ]
    return hits[:SUBJECT_ENTRIES]
