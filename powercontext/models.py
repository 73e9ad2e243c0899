"""The generic Artifact kernel: immutable revisions and compare-and-swap heads.

Every family (Memory, Experience, ...) stores its history here. A revision row is
written once and never updated or deleted; the head names the current revision and is
moved only by a conditional UPDATE on the revision it expects (see
``powercontext.artifacts.head_advance``), so a lost race is a conflict, never an
overwrite.
"""

import uuid

from django.db import models

from powercontext.fields import IdentityField


def new_vectors_token() -> str:
    """A fresh :attr:`VectorIndexState.vectors_token`: random, so no other content of the
    vectors (even after a rollback, or in a copy of the database) is ever named by it."""
    return uuid.uuid4().hex


class ArtifactRevision(models.Model):
    scope_id = IdentityField(max_length=256)
    family = IdentityField(max_length=32)
    artifact_id = IdentityField(max_length=64)
    revision = models.PositiveIntegerField()
    # Canonical JSON (RFC 8785) of the revision's content, stored as text so the bytes
    # that were hashed are the bytes that are kept.
    content = models.TextField()
    previous_hash = models.CharField(max_length=64)
    revision_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "family", "artifact_id", "revision"],
                name="artifact_revision_unique",
            ),
            models.CheckConstraint(
                condition=models.Q(revision__gte=1), name="artifact_revision_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.family}/{self.artifact_id}@{self.revision} ({self.scope_id})"


class ArtifactHead(models.Model):
    scope_id = IdentityField(max_length=256)
    family = IdentityField(max_length=32)
    artifact_id = IdentityField(max_length=64)
    revision = models.PositiveIntegerField()
    # What full-text search sees for families that are searched by head (Experience).
    # Analyzer output, derived from the head revision and rebuildable.
    searchable_text = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "family", "artifact_id"], name="artifact_head_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.family}/{self.artifact_id} -> {self.revision} ({self.scope_id})"


class SourceRecord(models.Model):
    """A captured source (a prompt): idempotent by id, journalled by position.

    The journal is a hash chain per scope in position order that commits to each
    payload through a salted digest rather than to the payload itself, so a payload can
    be erased (purged, or redacted) and the chain still verifies
    (``powercontext.sources``):

    - ``commitment`` = SHA-256 over the salt and the payload as captured; never changes;
    - ``entry_hash`` = SHA-256 over ``previous_hash`` (the entry before's ``entry_hash``,
      the genesis hash for position 1), the source's type, id and position, and the
      commitment;
    - ``payload_hash`` = the plain digest of the payload as stored now (what an identical
      retry is compared with); ``salt`` is the 32 random bytes, hex.

    An erasure replaces the payload (``""`` when purged, the redacted payload when
    redacted), sets ``payload_hash`` to the new payload's digest (``""`` when purged) and
    empties ``salt``: without the salt nobody can test a guess of the erased payload
    against the commitment. A ``RedactionRecord`` says when, why and what it left.
    """

    scope_id = IdentityField(max_length=256)
    source_type = IdentityField(max_length=32)
    source_id = IdentityField(max_length=256)
    position = models.PositiveBigIntegerField()
    payload = models.TextField()
    payload_hash = models.CharField(max_length=64, blank=True)
    salt = models.CharField(max_length=64, blank=True, default="")
    commitment = models.CharField(max_length=64, default="")
    previous_hash = models.CharField(max_length=64, default="")
    entry_hash = models.CharField(max_length=64, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    # Derived from the payload's metadata when it is captured, for the home page's counts
    # (``powercontext.sources.capture_agent``): which agent kind sent it ("codex",
    # "claude", "other") and a digest of its session id ("" without one). Indexed with
    # the time, so counting the last hour's prompts never reads a payload (up to 200,000
    # characters each).
    agent = models.CharField(max_length=16, default="")
    session_key = models.CharField(max_length=16, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "source_type", "source_id"], name="source_identity_unique"
            ),
            models.UniqueConstraint(fields=["scope_id", "position"], name="source_position_unique"),
        ]
        indexes = [
            models.Index(
                fields=["source_type", "created_at", "agent", "session_key", "scope_id"],
                name="source_recent_agents",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_type}:{self.source_id} #{self.position} ({self.scope_id})"

    @property
    def erased(self) -> bool:
        """The payload as captured is gone (purged, or redacted since)."""
        return not self.salt


class RedactionRecord(models.Model):
    """One erasure of stored text: what was redacted or purged, when and why.

    Append-only, a hash chain per scope in ``seq`` order (``powercontext.redaction_log``).
    ``target`` names the kind of row (``source``, ``memory.version``,
    ``candidate.version``, ``candidate.decision``, ``artifact.revision``) and
    ``target_key`` the row; ``digest`` is the digest of what the row holds afterwards, in
    that row's own terms (``""`` for a purge), which is how ``check_integrity`` tells a
    recorded erasure from an alteration. ``kinds`` is canonical JSON ``{kind: count}``.
    No digest of what was erased is kept: a redacted password could be guessed from one.
    """

    scope_id = IdentityField(max_length=256)
    seq = models.PositiveBigIntegerField()
    target = IdentityField(max_length=32)
    target_key = IdentityField(max_length=256)
    action = models.CharField(max_length=16)
    reason = models.CharField(max_length=512)
    kinds = models.TextField(default="{}")
    digest = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField()
    previous_hash = models.CharField(max_length=64)
    record_hash = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope_id", "seq"], name="redaction_seq_unique"),
        ]
        indexes = [
            models.Index(fields=["scope_id", "target", "target_key"], name="redaction_target_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target} {self.target_key} #{self.seq} ({self.scope_id})"


class VectorIndexState(models.Model):
    """Which embedding model the vectors of one declared index were computed with.

    One row per vector index (``powercontext.search.vectors``), written when the engine
    creates the index's vector table. A process whose model has another identity or
    dimension never reads or writes those vectors: the channel reports "model changed"
    until ``manage.py rebuild_index`` recreates the table for the new model. ``layout``
    names the shape of the table the engine created (its ``layout``; empty for a table
    made before layouts were recorded), so an older shape is recreated the same way.
    ``vectors_token`` names what the stored vectors are: a fresh one is written with each
    change to them (``powercontext.search.vectors.changes``), so a process that keeps
    vectors it read under a token knows they are still the stored ones while it stands.
    """

    index = IdentityField(max_length=64, primary_key=True)
    model_identity = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    layout = models.CharField(max_length=64, default="")
    vectors_token = models.CharField(max_length=32, default=new_vectors_token)
    created_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.index}: {self.model_identity} ({self.dimension})"
