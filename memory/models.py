"""The Memory family: immutable entry versions, the revision manifest, and the
derived active-entry projection that full-text search reads.

One Memory artifact per scope (family ``memory``, artifact id ``memory``) lives in the
generic kernel (``powercontext.models``); each of its revisions records the changes
that made it. This module holds what those changes point at.
"""

from django.db import models

from powercontext.fields import IdentityField


class MemoryEntryVersion(models.Model):
    """One immutable version of one entry. Written once, never updated."""

    entry_version_id = IdentityField(max_length=40, primary_key=True)
    scope_id = IdentityField(max_length=256)
    entry_id = IdentityField(max_length=40)
    version = models.PositiveIntegerField()
    previous_version_id = IdentityField(max_length=40, null=True, blank=True)
    kind = models.CharField(max_length=128)
    text = models.TextField()
    # Canonical JSON lists of SourceReference / ArtifactRef objects.
    source_refs = models.TextField(default="[]")
    artifact_refs = models.TextField(default="[]")
    content_hash = models.CharField(max_length=64)
    created_in_revision = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "entry_id", "version"], name="memory_entry_version_unique"
            ),
        ]
        indexes = [
            # The remember decision table's "does an active entry already say this?",
            # answered from the authoritative rows (``memory.services.memory_remember``).
            models.Index(fields=["scope_id", "content_hash"], name="entry_version_content_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id} v{self.version}"


class ManifestState(models.TextChoices):
    ACTIVE = "active"
    INACTIVE = "inactive"


class MemoryManifestRow(models.Model):
    """A manifest row: entry E was at version V, in state S, from revision A up to (not
    including) revision B.

    The manifest of revision R is every row with ``valid_from <= R < valid_to`` (an open
    row, ``valid_to`` NULL, is valid up to the head). A write closes the rows of the
    entries it changes and opens new ones, so it costs O(changed entries), and any
    historical revision's manifest is answered exactly. Retired entries stay in the
    manifest as ``inactive`` so a citation keeps resolving after retirement.
    """

    scope_id = IdentityField(max_length=256)
    entry_id = IdentityField(max_length=40)
    entry_version = models.ForeignKey(
        MemoryEntryVersion, on_delete=models.PROTECT, related_name="manifest_rows"
    )
    state = models.CharField(max_length=8, choices=ManifestState.choices)
    valid_from = models.PositiveIntegerField()
    valid_to = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["scope_id", "entry_id", "valid_from"], name="manifest_entry_idx"),
            models.Index(fields=["scope_id", "valid_to", "entry_id"], name="manifest_open_idx"),
            models.Index(fields=["scope_id", "valid_from"], name="manifest_from_idx"),
        ]

    def __str__(self) -> str:
        end = "" if self.valid_to is None else self.valid_to
        return f"{self.entry_id} {self.state} [{self.valid_from}, {end})"


class MemoryActiveEntry(models.Model):
    """Derived: the entries active at the scope's Memory head, as search sees them.

    Rebuildable from the manifest at any time (``manage.py rebuild_index``). The
    full-text index over ``searchable_text`` is kept by the database itself (FTS5
    triggers on SQLite, a FULLTEXT index on OceanBase), created in migrations.
    """

    scope_id = IdentityField(max_length=256)
    entry_id = IdentityField(max_length=40)
    entry_version = models.OneToOneField(
        MemoryEntryVersion, on_delete=models.PROTECT, related_name="active_projection"
    )
    # sha256 of the NFC kind and text: the remember decision table's "same entry".
    kind_text_hash = models.CharField(max_length=64)
    # A term that only this scope's rows carry, so FTS5 can restrict a match to one
    # scope inside the index instead of filtering every scope's hits afterwards.
    scope_token = models.CharField(max_length=40)
    searchable_text = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "entry_id"], name="active_entry_unique"),
        ]
        indexes = [
            models.Index(fields=["scope_id", "kind_text_hash"], name="active_entry_dedupe_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id} ({self.scope_id})"


class MemoryTermStat(models.Model):
    """Derived: in how many active entries of a scope each analyzer term occurs.

    Term selection (``powercontext.search.policy``) weighs query terms by how rare they
    are in the scope. Keeping the counts here, beside the projection and in the same
    transaction, gives every backend the same exact per-scope statistics with one
    indexed lookup per query (FTS5's vocabulary tables are global across scopes and
    OceanBase exposes none). The row for the empty term counts the scope's documents.
    """

    scope_id = IdentityField(max_length=256)
    term = IdentityField(max_length=64, blank=True)
    documents = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "term"], name="memory_term_stat_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.term!r}: {self.documents} ({self.scope_id})"


# Reviewers (the Experience reviewers group has it) may mark entries for session start.
SESSION_MARK_PERMISSION = "memory.mark_session_start"


class SessionStartMark(models.Model):
    """A reviewer chose this entry version for every session's start (the ``SessionStart``
    pack, ``contextpack.session``): who and when. A mark names one version: an entry
    revised since (by an agent, or anyone) is not in the pack again until a reviewer
    marks the new version, so an agent's write alone never reaches every session."""

    entry_version = models.OneToOneField(
        MemoryEntryVersion, on_delete=models.CASCADE, related_name="session_mark"
    )
    scope_id = IdentityField(max_length=256)
    marked_by = models.CharField(max_length=150)
    marked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["scope_id", "marked_at"], name="session_mark_scope_idx")]
        permissions = [("mark_session_start", "Can mark Memory entries for session start")]

    def __str__(self) -> str:
        return f"{self.entry_version_id} marked by {self.marked_by}"
