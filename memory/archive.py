"""The Memory family's archive streams (docs/portability.md): entry versions and
manifest rows, with the checks that need the rows before them.

The active-entry projection and the term statistics are derived (rebuilt by
``memory.rebuild`` on import) and left out. What a single pass cannot check without
holding a scope in memory (a manifest row names an existing version of its entry, each
revision's changes equal the rows it opens and closes) ``memory.integrity`` checks on
the imported rows before they are committed.
"""

from collections.abc import Mapping
from typing import Any

from memory.models import ManifestState, MemoryEntryVersion
from memory.services import version_verifies
from memory.values import MEMORY_ARTIFACT_ID, MEMORY_FAMILY
from powercontext.archive.kernel import CHAINS
from powercontext.archive.streams import Stream, register_left_out, register_stream


def register() -> None:
    register_stream(
        Stream(
            "memory.entry_version",
            model="memory.MemoryEntryVersion",
            order=("entry_id", "version"),
            verifier="memory.archive.EntryVersions",
        )
    )
    register_stream(
        Stream(
            "memory.manifest_row",
            model="memory.MemoryManifestRow",
            order=("entry_id", "valid_from"),
            verifier="memory.archive.ManifestRows",
        )
    )
    # A reviewer's choice of a version for every session's start (the desk): who chose
    # is a name (``marked_by``), like a decision's ``decided_by_username``, so it travels
    # with the version it names. Added in format version 3.
    register_stream(
        Stream(
            "memory.session_start_mark",
            model="memory.SessionStartMark",
            order=("entry_version_id",),
            verifier="memory.archive.SessionStartMarks",
            since=3,
        )
    )
    register_left_out(
        "memory.MemoryActiveEntry", "derived: the projection of the manifest, rebuilt on import"
    )
    register_left_out(
        "memory.MemoryTermStat", "derived: counted from the projection, rebuilt on import"
    )


def _memory_head(shared: dict[str, Any]) -> int:
    chains: dict[tuple[str, str], int] = shared.get(CHAINS, {})
    return chains.get((MEMORY_FAMILY, MEMORY_ARTIFACT_ID), 0)


class EntryVersions:
    """Each version's content_hash recomputes; an entry's versions are 1..n, each naming
    the one before it; each was created in a revision of the scope's Memory."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.head = _memory_head(shared)
        self.previous: tuple[str, int, str] | None = None  # (entry, version, version id)

    def row(self, values: Mapping[str, Any]) -> str | None:
        # The rule every path into the projection applies, whatever it becomes.
        if not version_verifies(MemoryEntryVersion(**values)):
            return "content_hash does not match its content"
        entry, number = values["entry_id"], values["version"]
        previous = self.previous
        self.previous = (entry, number, values["entry_version_id"])
        if previous is None or previous[0] != entry:
            if number != 1 or values["previous_version_id"] is not None:
                return f"the entry's first version is v{number}, naming another before it"
        elif number != previous[1] + 1 or values["previous_version_id"] != previous[2]:
            return f"v{number} does not follow v{previous[1]} of its entry"
        if not 1 <= values["created_in_revision"] <= self.head:
            return f"created in revision {values['created_in_revision']}, outside 1..{self.head}"
        return None

    def end(self) -> str | None:
        return None


class ManifestRows:
    """An entry's rows follow each other without gap or overlap, only its last may be
    open, and every range lies within the scope's Memory revisions."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.head = _memory_head(shared)
        self.previous: tuple[str, int | None] | None = None  # (entry, valid_to)

    def row(self, values: Mapping[str, Any]) -> str | None:
        entry, start, end = values["entry_id"], values["valid_from"], values["valid_to"]
        previous = self.previous
        self.previous = (entry, end)
        if values["state"] not in ManifestState.values:
            return f"unknown state {values['state']!r}"
        if not 1 <= start <= self.head:
            return f"starts at revision {start}, outside 1..{self.head}"
        if end is not None and not start < end <= self.head:
            return f"ends at revision {end}, outside ({start}, {self.head}]"
        if previous is not None and previous[0] == entry:
            if previous[1] is None:
                return "follows a row of its entry that is still open"
            if previous[1] != start:
                return "leaves a gap after, or overlaps, the entry's row before it"
        return None

    def end(self) -> str | None:
        return None


class SessionStartMarks:
    """Each mark names who marked it. That it names a version of its own scope (the
    versions are not held here: a scope's can be many) is checked by the Memory
    integrity check on the written scope, before its commit, as for manifest rows."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        pass

    def row(self, values: Mapping[str, Any]) -> str | None:
        if not values["marked_by"]:
            return "the mark names nobody who marked it"
        return None

    def end(self) -> str | None:
        return None
