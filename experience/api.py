"""HTTP operations of Experience and its candidates (DESIGN.md §4). Each view validates,
calls one service or selector, and renders.

The agent proposes, lists and gets; a person's token lists and gets. Deciding (approve,
reject, revise) is a human act: it needs the personal token of a user with the review
permission (``powercontext.api.auth.OPERATION_ROLES``), checked before the body is
validated, so anyone else gets 403 ``permission_denied`` whatever they send.
"""

from drf_spectacular.utils import OpenApiExample, extend_schema

from experience import selectors, services
from experience.serializers import (
    ArtifactCandidateSchema,
    CandidateApproveInput,
    CandidateGetInput,
    CandidateListInput,
    CandidateListOutput,
    CandidateRejectInput,
    CandidateReviseInput,
    ExperienceGetInput,
    ExperienceGetOutput,
    ExperienceProposeInput,
)
from experience.values import ArtifactRef, Proposal
from powercontext.api.schema import responses
from powercontext.api.views import ApiView

EXPERIENCE_TAGS = ["experience"]
CANDIDATE_TAGS = ["artifact-candidates"]
PROPOSE_EXAMPLE = OpenApiExample(
    "A prompt as evidence",
    request_only=True,
    value={
        "scope_id": "git:example.com/acme/widgets",
        "proposal": {
            "situation": "A schema change broke the nightly import.",
            "action": "We added a migration test for the importer.",
            "outcome": "The next schema change was caught in CI.",
            "lesson": "Run the migration tests after changing persistence.",
        },
        "source_refs": [{"name": "content", "source_id": "prompt-42"}],
        "reason": "Came up twice this week.",
    },
    description="`prompt-42` was captured first with `POST /v1/sources/content`; "
    "`artifact_refs` may be left out because `source_refs` is not empty.",
)


class ReviewerView(ApiView):
    """A decision: ``OPERATION_ROLES`` lets only a person with the review permission in."""

    @property
    def reviewer(self):
        return self.request.user.user


class ExperienceProposeView(ApiView):
    operation = "propose_experience"

    @extend_schema(
        operation_id="propose_experience",
        tags=EXPERIENCE_TAGS,
        request=ExperienceProposeInput,
        responses=responses({201: ArtifactCandidateSchema}, 403, 404, 409),
        description="Propose a lesson learned as a pending candidate. It reaches search and "
        "Context Packs only once a reviewer approves it. Evidence is required: at least one "
        "of `source_refs` (captured sources of the scope) and `artifact_refs` (existing "
        "revisions) must be non-empty. Agent token only.",
        examples=[PROPOSE_EXAMPLE],
    )
    def post(self, request):
        data = self.validated(ExperienceProposeInput)
        target = data.get("target")
        candidate = services.experience_propose(
            scope_id=data["scope_id"],
            proposal=Proposal.from_payload(data["proposal"]),
            source_refs=data["source_refs"],
            artifact_refs=data["artifact_refs"],
            target=None if target is None else ArtifactRef.from_payload(target),
            reason=data.get("reason"),
        )
        return self.respond(candidate, status=201)


class ExperienceGetView(ApiView):
    operation = "get_experience"

    @extend_schema(
        operation_id="get_experience",
        tags=EXPERIENCE_TAGS,
        request=ExperienceGetInput,
        responses=responses({200: ExperienceGetOutput}, 404),
        description="The exact approved Experience revision named, even after it was "
        "revised. Anything else is 404 `artifact_not_found`.",
    )
    def post(self, request):
        data = self.validated(ExperienceGetInput)
        artifact = data["artifact"]
        return self.respond(
            selectors.experience_get(
                scope_id=data["scope_id"],
                family=artifact["family"],
                artifact_id=artifact["artifact_id"],
                revision=artifact["revision"],
            )
        )


class CandidateListView(ApiView):
    operation = "list_artifact_candidates"

    @extend_schema(
        operation_id="list_artifact_candidates",
        tags=CANDIDATE_TAGS,
        request=CandidateListInput,
        responses=responses({200: CandidateListOutput}),
        description="Candidates newest first (ties by candidate id). `next_cursor` is "
        "opaque and valid only with the same filters.",
    )
    def post(self, request):
        data = self.validated(CandidateListInput)
        return self.respond(
            selectors.candidate_list(
                scope_id=data["scope_id"],
                status=data["status"],
                family=data.get("family"),
                cursor=data.get("cursor"),
                limit=data["limit"],
            )
        )


class CandidateGetView(ApiView):
    operation = "get_artifact_candidate"

    @extend_schema(
        operation_id="get_artifact_candidate",
        tags=CANDIDATE_TAGS,
        request=CandidateGetInput,
        responses=responses({200: ArtifactCandidateSchema}, 404, 409),
        description="The candidate's current version and status. With `expected_version`, "
        "409 `candidate_conflict` unless it is still the current version.",
    )
    def post(self, request):
        data = self.validated(CandidateGetInput)
        return self.respond(
            selectors.candidate_get(
                scope_id=data["scope_id"],
                candidate_id=data["candidate_id"],
                expected_version=data.get("expected_version"),
            )
        )


class CandidateApproveView(ReviewerView):
    operation = "approve_artifact_candidate"

    @extend_schema(
        operation_id="approve_artifact_candidate",
        tags=CANDIDATE_TAGS,
        request=CandidateApproveInput,
        responses=responses({200: ArtifactCandidateSchema}, 403, 404, 409),
        description="Reviewer only. Creates (or revises the target) Experience in one "
        "transaction. 409 `candidate_terminal` when already decided, `candidate_conflict` "
        "for a stale version, `revision_conflict` when the target moved on.",
    )
    def post(self, request):
        data = self.validated(CandidateApproveInput)
        return self.respond(
            services.candidate_approve(
                scope_id=data["scope_id"],
                candidate_id=data["candidate_id"],
                expected_version=data["expected_version"],
                reviewer=self.reviewer,
            )
        )


class CandidateRejectView(ReviewerView):
    operation = "reject_artifact_candidate"

    @extend_schema(
        operation_id="reject_artifact_candidate",
        tags=CANDIDATE_TAGS,
        request=CandidateRejectInput,
        responses=responses({200: ArtifactCandidateSchema}, 403, 404, 409),
        description="Reviewer only. Rejects with a required reason.",
    )
    def post(self, request):
        data = self.validated(CandidateRejectInput)
        return self.respond(
            services.candidate_reject(
                scope_id=data["scope_id"],
                candidate_id=data["candidate_id"],
                expected_version=data["expected_version"],
                reason=data["reason"],
                reviewer=self.reviewer,
            )
        )


class CandidateReviseView(ReviewerView):
    operation = "revise_artifact_candidate"

    @extend_schema(
        operation_id="revise_artifact_candidate",
        tags=CANDIDATE_TAGS,
        request=CandidateReviseInput,
        responses=responses({200: ArtifactCandidateSchema}, 403, 404, 409),
        description="Reviewer only. Writes a new version of a pending candidate.",
    )
    def post(self, request):
        data = self.validated(CandidateReviseInput)
        return self.respond(
            services.candidate_revise(
                scope_id=data["scope_id"],
                candidate_id=data["candidate_id"],
                expected_version=data["expected_version"],
                proposal=Proposal.from_payload(data["proposal"]),
                source_refs=data.get("source_refs"),
                artifact_refs=data.get("artifact_refs"),
                reason=data.get("reason"),
                reviewer=self.reviewer,
            )
        )
