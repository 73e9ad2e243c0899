"""A scope id that is probably a mistake: a URL, one with spaces, or a new scope one edit
away from an existing one (``my-rpeo`` beside ``my-repo``).

Scope ids are the user's to choose, so such a request is served as asked; but a mistyped
scope silently answers with empty results and empty packs, so the API says so in the
``PowerContext-Warning`` response header (never in the body: the bodies are a contract),
the hook reports its code, and the desk's pack preview shows it.

The header's value is ``<code>: <sentence>``; the code is one of ``CODES``. Ids in the
sentence are ``ascii()``-escaped, so the value is always a valid header.
"""

from __future__ import annotations

import threading
from datetime import datetime

from powercontext.models import ArtifactHead, SourceRecord

HEADER = "PowerContext-Warning"
SCOPE_URL = "scope_looks_like_url"
SCOPE_SPACES = "scope_has_spaces"
SCOPE_NEAR_MISS = "scope_near_miss"
CODES = (SCOPE_URL, SCOPE_SPACES, SCOPE_NEAR_MISS)
SERVED = "the request was served as asked (scope ids are exact)"

# Scopes known to exist need no near-miss check again: the check reads every scope id,
# and a scope is rarely deleted (a stale entry here only spares a warning).
_known: set[str] = set()

# Every scope id, as of a data version: without it, each request on a scope that does
# not exist yet (a typo is asked again and again) scanned both tables for their distinct
# scope ids. The version is the newest row (id, scope and time) of each table a scope lives
# in, read from the database on each use, so a write by any thread or process (another
# server, an import, the admin) moves it and the next use reads the ids again; nothing
# on the write paths has to remember to invalidate it. It only names the neighbours a
# near miss is looked for among: whether the scope itself exists is still asked of the
# database (an insert that commits after a newer one, possible on OceanBase, does not
# move the version). A scope whose rows are all deleted stays here until the next
# insert, so a warning may name it until then.
_Newest = tuple[int, str, datetime] | None
_Version = tuple[_Newest, _Newest]
_catalogue: tuple[_Version, tuple[str, ...]] | None = None
_catalogue_lock = threading.Lock()


def scope_warning(scope_id: str) -> str | None:
    """The warning for ``scope_id`` (``<code>: <sentence>``), or None. Call it before
    the request writes: a new scope is only new until its first write."""
    shown = ascii(scope_id)
    if "://" in scope_id or scope_id.lower().startswith("www."):
        return (
            f"{SCOPE_URL}: scope_id {shown} looks like a URL; the hook's scopes look like "
            f"'git:github.com/team/repo'; {SERVED}"
        )
    if any(character.isspace() for character in scope_id):
        return f"{SCOPE_SPACES}: scope_id {shown} holds spaces; {SERVED}"
    if scope_id in _known:
        return None
    if _exists(scope_id):
        _known.add(scope_id)
        return None
    near = next((other for other in _scopes() if one_edit_apart(scope_id, other)), None)
    if near is None:
        return None
    return (
        f"{SCOPE_NEAR_MISS}: scope_id {shown} holds nothing yet and is one edit away from "
        f"the scope {near!a}; {SERVED}"
    )


def _exists(scope_id: str) -> bool:
    return (
        ArtifactHead.objects.filter(scope_id=scope_id).exists()
        or SourceRecord.objects.filter(scope_id=scope_id).exists()
    )


def _scopes() -> tuple[str, ...]:
    """Every scope id, sorted: read again only when the data version moved."""
    global _catalogue
    version = _version()
    catalogue = _catalogue
    if catalogue is None or catalogue[0] != version:
        # One thread reads, the others wait for its answer rather than scan too.
        with _catalogue_lock:
            catalogue = _catalogue
            if catalogue is None or catalogue[0] != version:
                heads = ArtifactHead.objects.values_list("scope_id", flat=True).distinct()
                sources = SourceRecord.objects.values_list("scope_id", flat=True).distinct()
                catalogue = (version, tuple(sorted(set(heads) | set(sources))))
                _catalogue = catalogue
    return catalogue[1]


def _version() -> _Version:
    """The newest row of each table a scope lives in: two seeks on the primary key.
    Its scope id and time beside its id tell apart a row whose id was given again (the
    id of a rolled-back insert can be)."""
    head = ArtifactHead.objects.order_by("-pk").values_list("pk", "scope_id", "updated_at")
    source = SourceRecord.objects.order_by("-pk").values_list("pk", "scope_id", "created_at")
    return head.first(), source.first()


def forget() -> None:
    """Drop what this process remembers about scopes (tests whose database is rolled
    back under it)."""
    global _catalogue
    _known.clear()
    _catalogue = None


def one_edit_apart(first: str, second: str) -> bool:
    """Whether ``first`` and ``second`` differ by exactly one inserted, deleted or
    replaced character, two neighbours swapped, or letter case alone. Linear in their
    length."""
    if first == second:
        return False
    if first.casefold() == second.casefold():
        return True
    if abs(len(first) - len(second)) > 1:
        return False
    if len(first) > len(second):
        first, second = second, first
    start = 0
    while start < len(first) and first[start] == second[start]:
        start += 1
    if len(first) == len(second):
        if first[start + 1 :] == second[start + 1 :]:
            return True  # one replaced
        swapped = first[start : start + 2] == second[start : start + 2][::-1]
        return swapped and first[start + 2 :] == second[start + 2 :]
    return first[start:] == second[start + 1 :]  # one inserted into the shorter
