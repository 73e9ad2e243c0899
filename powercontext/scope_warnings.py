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


def _scopes() -> list[str]:
    heads = ArtifactHead.objects.values_list("scope_id", flat=True).distinct()
    sources = SourceRecord.objects.values_list("scope_id", flat=True).distinct()
    return sorted(set(heads) | set(sources))


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
