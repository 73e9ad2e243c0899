"""Candidates (proposed lessons awaiting review) and approved Experience.

A candidate is a head (:class:`Candidate`: status, current version, the decision) over
immutable versions (:class:`CandidateVersion`: what was proposed, with its evidence). Only
approval turns a candidate into Experience, which lives in the generic Artifact kernel
(family ``experience``, ``exp_<32 hex>``); there is no Experience head table of its own.
:class:`Experience` is a proxy over the kernel's heads so the admin can browse them.

Rows are written only by ``experience.services``.
"""

from django.conf import settings
from django.db import models

from experience.values import EXPERIENCE_FAMILY
from powercontext.fields import IdentityField
from powercontext.models import ArtifactHead

REVIEW_PERMISSION = "experience.review_candidate"


class CandidateStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class Candidate(models.Model):
    """The head of a candidate: which version is current, and how it was decided."""

    candidate_id = IdentityField(max_length=40, primary_key=True)
    scope_id = IdentityField(max_length=256)
    family = IdentityField(max_length=32, default=EXPERIENCE_FAMILY)
    version = models.PositiveIntegerField()
    status = models.CharField(
        max_length=8, choices=CandidateStatus.choices, default=CandidateStatus.PENDING
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # The decision. Approved: the Experience revision it produced; rejected: why.
    result_artifact_id = IdentityField(max_length=64, null=True, blank=True)
    result_revision = models.PositiveIntegerField(null=True, blank=True)
    # NULL, not "": the API distinguishes "no reason" (null) from any text.
    decision_reason = models.TextField(null=True, blank=True)  # noqa: DJ001
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    # Kept as text too, so the audit survives the user's deletion or renaming.
    decided_by_username = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        permissions = [("review_candidate", "Can approve, reject and revise candidates")]
        ordering = ["-created_at", "candidate_id"]
        indexes = [
            models.Index(
                fields=["scope_id", "status", "family", "-created_at", "candidate_id"],
                name="candidate_queue_idx",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=CandidateStatus.values),
                name="candidate_status_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(version__gte=1), name="candidate_version_positive"
            ),
            # Approved requires the result artifact; rejected requires a reason; pending
            # carries no decision at all.
            models.CheckConstraint(
                condition=~models.Q(status=CandidateStatus.APPROVED)
                | (
                    models.Q(result_artifact_id__isnull=False)
                    & models.Q(result_revision__isnull=False)
                    & models.Q(decided_at__isnull=False)
                ),
                name="candidate_approved_has_result",
            ),
            models.CheckConstraint(
                condition=~models.Q(status=CandidateStatus.REJECTED)
                | (
                    models.Q(decision_reason__isnull=False)
                    & ~models.Q(decision_reason="")
                    & models.Q(decided_at__isnull=False)
                    & models.Q(result_artifact_id__isnull=True)
                ),
                name="candidate_rejected_has_reason",
            ),
            models.CheckConstraint(
                condition=~models.Q(status=CandidateStatus.PENDING)
                | (
                    models.Q(result_artifact_id__isnull=True)
                    & models.Q(decision_reason__isnull=True)
                    & models.Q(decided_at__isnull=True)
                ),
                name="candidate_pending_undecided",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.candidate_id} v{self.version} {self.status}"


class CandidateVersion(models.Model):
    """One immutable version of a candidate's proposal. Written once, never updated."""

    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="versions")
    version = models.PositiveIntegerField()
    situation = models.TextField()
    action = models.TextField()
    outcome = models.TextField()
    lesson = models.TextField()
    # Canonical JSON lists of SourceReference / ArtifactRef objects.
    source_refs = models.TextField(default="[]")
    artifact_refs = models.TextField(default="[]")
    # The Experience revision this proposal revises (None: a new Experience).
    target_artifact_id = IdentityField(max_length=64, null=True, blank=True)
    target_revision = models.PositiveIntegerField(null=True, blank=True)
    reason = models.TextField(null=True, blank=True)  # noqa: DJ001 - null is "no reason"
    # "agent" or "reviewer:<username>".
    created_by = models.CharField(max_length=160)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["candidate_id", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "version"], name="candidate_version_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(target_artifact_id__isnull=True, target_revision__isnull=True)
                | models.Q(target_artifact_id__isnull=False, target_revision__gte=1),
                name="candidate_version_target_complete",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.candidate_id} v{self.version}"


class ReviewerToken(models.Model):
    """A reviewer's personal API token. Only its SHA-256 is kept; the token itself is
    shown once by ``manage.py reviewer_token``."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviewer_token"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"reviewer token of {self.user}"


class ExperienceTermStat(models.Model):
    """Derived: in how many approved Experience heads of a scope each analyzer term occurs
    (the row for the empty term counts the heads). Written with the head in the approval
    transaction; term selection reads it, as Memory's ``MemoryTermStat`` (which explains
    why the counts are kept per scope rather than read from an engine)."""

    scope_id = IdentityField(max_length=256)
    term = IdentityField(max_length=64, blank=True)
    documents = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "term"], name="experience_term_stat_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term!r}: {self.documents} ({self.scope_id})"


class ExperienceManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(family=EXPERIENCE_FAMILY)


class Experience(ArtifactHead):
    """Approved Experience, as the heads of the kernel's ``experience`` artifacts (a proxy:
    no table of its own). Read-only; written only by candidate approval."""

    objects = ExperienceManager()

    class Meta:
        proxy = True
        verbose_name = "approved experience"
        verbose_name_plural = "approved experience"
