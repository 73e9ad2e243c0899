"""Input and output shapes of the Experience and candidate operations (DESIGN.md §4)."""

from rest_framework import serializers

from experience.values import MAX_REFS, PROPOSAL_FIELD_MAX_CHARS, REASON_MAX_CHARS
from powercontext.api.fields import (
    ArtifactRefSchema,
    SourceReferenceSchema,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    scope_id_field,
)


class StrictChoiceField(serializers.ChoiceField):
    """A JSON string out of ``choices`` (no ``1`` for ``"1"``)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        return super().to_internal_value(data)


def proposal_text_field() -> StrictCharField:
    return StrictCharField(non_blank=True, min_length=1, max_length=PROPOSAL_FIELD_MAX_CHARS)


class ExperienceProposalSchema(StrictSerializer):
    """A lesson learned, in four parts: the situation, what was done, what came of it
    and the lesson to apply next time."""

    situation = proposal_text_field()
    action = proposal_text_field()
    outcome = proposal_text_field()
    lesson = proposal_text_field()


def source_refs_field(**kwargs) -> SourceReferenceSchema:
    return SourceReferenceSchema(many=True, max_length=MAX_REFS, **kwargs)


def artifact_refs_field(**kwargs) -> ArtifactRefSchema:
    return ArtifactRefSchema(many=True, max_length=MAX_REFS, **kwargs)


def candidate_id_field() -> StrictCharField:
    return StrictCharField(non_blank=True, min_length=1, max_length=64)


def expected_version_field(**kwargs) -> StrictIntegerField:
    return StrictIntegerField(min_value=1, **kwargs)


def _at_least_one_ref(attrs: dict) -> dict:
    if not attrs.get("source_refs") and not attrs.get("artifact_refs"):
        raise serializers.ValidationError(
            {"source_refs": ["A proposal needs at least one source or artifact reference."]}
        )
    return attrs


EVIDENCE_RULE = (
    "Each field may be left out, but a proposal needs evidence: at least one of "
    "`source_refs` and `artifact_refs` must be non-empty (else 422 on `source_refs`)."
)
SOURCE_REFS_HELP = (
    f"Sources captured in this scope (`POST /v1/sources/content`). {EVIDENCE_RULE} A "
    "source never captured in the scope is 422 on `source_refs.N`. A capture id of the "
    "hook's form (`prompt:` and a digest of the prompt as typed) is stored and answered "
    "as the capture is stored: keyed (`prompt-hmac:`)."
)
ARTIFACT_REFS_HELP = (
    f"Artifact revisions of this scope. {EVIDENCE_RULE} A revision that does not exist is "
    "404 `artifact_not_found`."
)


class ExperienceProposeInput(StrictSerializer):
    """A lesson learned and its evidence: at least one source or artifact reference, each
    naming something that exists in the scope. Rejects unknown fields."""

    scope_id = scope_id_field()
    proposal = ExperienceProposalSchema()
    source_refs = source_refs_field(required=False, default=list, help_text=SOURCE_REFS_HELP)
    artifact_refs = artifact_refs_field(required=False, default=list, help_text=ARTIFACT_REFS_HELP)
    target = ArtifactRefSchema(required=False, allow_null=True)
    reason = StrictCharField(max_length=REASON_MAX_CHARS, required=False, allow_null=True)

    def validate_target(self, value):
        if value is not None and value["family"] != "experience":
            raise serializers.ValidationError("Only an experience can be a target.")
        return value

    def validate(self, attrs):
        return _at_least_one_ref(attrs)


class ArtifactCandidateSchema(serializers.Serializer):
    """A proposed Experience at its current version: ``pending`` until a reviewer
    approves it (``result_artifact`` names the Experience made) or rejects it
    (``decision_reason`` says why)."""

    candidate_id = serializers.CharField()
    version = serializers.IntegerField(min_value=1)
    family = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "approved", "rejected"])
    proposal = ExperienceProposalSchema()
    source_refs = SourceReferenceSchema(many=True)
    artifact_refs = ArtifactRefSchema(many=True)
    target = ArtifactRefSchema(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    result_artifact = ArtifactRefSchema(allow_null=True)
    decision_reason = serializers.CharField(allow_null=True)


class ExperienceGetInput(StrictSerializer):
    """The Experience revision to read. Rejects unknown fields."""

    scope_id = scope_id_field()
    artifact = ArtifactRefSchema()


class ExperienceGetOutput(serializers.Serializer):
    """An approved Experience revision: its lesson and the evidence it was approved
    with."""

    artifact = ArtifactRefSchema()
    content = ExperienceProposalSchema()
    source_refs = SourceReferenceSchema(many=True)
    artifact_refs = ArtifactRefSchema(many=True)


class CandidateListInput(StrictSerializer):
    """Which candidates to list and the page to start from (``cursor`` from the previous
    page). Rejects unknown fields."""

    scope_id = scope_id_field()
    status = StrictChoiceField(choices=["pending", "approved", "rejected"], default="pending")
    family = StrictCharField(non_blank=True, max_length=32, required=False, allow_null=True)
    cursor = StrictCharField(min_length=1, max_length=1024, required=False, allow_null=True)
    limit = StrictIntegerField(min_value=1, max_value=100, default=50)


class CandidateListOutput(serializers.Serializer):
    """One page of candidates, newest first; ``next_cursor`` is ``null`` on the last
    page."""

    candidates = ArtifactCandidateSchema(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class CandidateGetInput(StrictSerializer):
    """The candidate to read, optionally only if it is still at ``expected_version``.
    Rejects unknown fields."""

    scope_id = scope_id_field()
    candidate_id = candidate_id_field()
    expected_version = expected_version_field(required=False, allow_null=True)


class CandidateApproveInput(StrictSerializer):
    """The candidate to approve, at the version the reviewer read. Rejects unknown
    fields."""

    scope_id = scope_id_field()
    candidate_id = candidate_id_field()
    expected_version = expected_version_field()


class CandidateRejectInput(StrictSerializer):
    """The candidate to reject, at the version the reviewer read, and why. Rejects
    unknown fields."""

    scope_id = scope_id_field()
    candidate_id = candidate_id_field()
    expected_version = expected_version_field()
    reason = StrictCharField(non_blank=True, min_length=1, max_length=REASON_MAX_CHARS)


class CandidateReviseInput(StrictSerializer):
    """A new version of a pending candidate. Refs and reason left out keep the previous
    version's; the target cannot change."""

    scope_id = scope_id_field()
    candidate_id = candidate_id_field()
    expected_version = expected_version_field()
    proposal = ExperienceProposalSchema()
    source_refs = source_refs_field(required=False)
    artifact_refs = artifact_refs_field(required=False)
    reason = StrictCharField(max_length=REASON_MAX_CHARS, required=False, allow_null=True)
