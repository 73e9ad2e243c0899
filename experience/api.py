"""HTTP operations of Experience and its candidates (DESIGN.md §4). Each view validates,
calls one service or selector, and renders.

The agent proposes, lists and gets; a person's token lists and gets. Deciding (approve,
reject, revise) is a human act: it needs the personal token of a user with the review
permission (``role = Role.DECIDE`` on the view), checked before the body is
validated, so anyone else gets 403 ``permission_denied`` whatever they send.
"""

from drf_spectacular.utils import extend_schema

from experience import openapi_examples as examples
from experience import rendering, selectors, services
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
from experience.values import Proposal
from powercontext.api.auth import Role
from powercontext.api.openapi_examples import AGENT_ONLY, REVIEWER_ONLY
from powercontext.api.redacted import redacted_header_parameter, with_redactions
from powercontext.api.schema import responses, success
from powercontext.api.views import ApiView
from powercontext.refs import ArtifactRef

EXPERIENCE_TAGS = ["experience"]
CANDIDATE_TAGS = ["artifact-candidates"]


class ReviewerView(ApiView):
    """A decision: its ``Role.DECIDE`` lets only a person with the review permission in."""

    @property
    def reviewer(self):
        return self.request.user.user


class ExperienceProposeView(ApiView):
    operation = "propose_experience"
    role = Role.WRITE
    input_serializer = ExperienceProposeInput
    render = staticmethod(rendering.candidate)

    @extend_schema(
        operation_id="propose_experience",
        parameters=[redacted_header_parameter(201)],
        tags=EXPERIENCE_TAGS,
        request=ExperienceProposeInput,
        responses=responses(
            {
                201: success(
                    ArtifactCandidateSchema,
                    "The new candidate, `pending`, at version 1.",
                    examples.PROPOSE_RESPONSE,
                )
            },
            403,
            404,
            409,
            examples={403: [AGENT_ONLY], 422: [examples.PROPOSE_UNKNOWN_SOURCE]},
        ),
        description="Propose a lesson learned as a pending candidate. It reaches search and "
        "Context Packs only once a reviewer approves it. Secrets in the proposal and the "
        "reason are stored as typed markers (`[redacted:aws-secret-key]`), and the "
        "`PowerContext-Redacted` header counts them. Evidence is required: at least one "
        "of `source_refs` (captured sources of the scope) and `artifact_refs` (existing "
        "revisions) must be non-empty. Agent token only. Errors: 403 `permission_denied` "
        "for a person's token; 404 `artifact_not_found` for an `artifact_refs` revision "
        "or a `target` that does not exist; 409 `revision_conflict` when `target` is not "
        "the Experience's latest revision; 422 `invalid_request` for no evidence, a "
        "source never captured in the scope (`source_refs.N`) or another bad field.",
        examples=[examples.PROPOSE_REQUEST],
    )
    def post(self, request):
        return self.operate(status=201)

    @staticmethod
    def perform(data):
        target = data.get("target")
        return services.experience_propose(
            scope_id=data["scope_id"],
            proposal=Proposal.from_payload(data["proposal"]),
            source_refs=data["source_refs"],
            artifact_refs=data["artifact_refs"],
            target=None if target is None else ArtifactRef.from_payload(target),
            reason=data.get("reason"),
        )


class ExperienceGetView(ApiView):
    operation = "get_experience"
    role = Role.READ
    input_serializer = ExperienceGetInput
    render = staticmethod(rendering.approved_experience)

    @extend_schema(
        operation_id="get_experience",
        tags=EXPERIENCE_TAGS,
        request=ExperienceGetInput,
        responses=responses(
            {
                200: success(
                    ExperienceGetOutput,
                    "The Experience revision: its lesson and the evidence it was approved with.",
                    examples.GET_RESPONSE,
                )
            },
            404,
            examples={404: [examples.GET_NOT_FOUND]},
        ),
        examples=[examples.GET_REQUEST],
        description="The exact approved Experience revision named (as a Context Pack "
        "cites it), even after it was revised. Errors: 404 `artifact_not_found` for "
        "anything else (another family, another scope, a revision that does not exist); "
        "422 `invalid_request` for a bad field.",
    )
    def post(self, request):
        return self.operate()

    @staticmethod
    def perform(data):
        artifact = data["artifact"]
        return selectors.experience_get(
            scope_id=data["scope_id"],
            family=artifact["family"],
            artifact_id=artifact["artifact_id"],
            revision=artifact["revision"],
        )


class CandidateListView(ApiView):
    operation = "list_artifact_candidates"
    role = Role.READ

    @extend_schema(
        operation_id="list_artifact_candidates",
        tags=CANDIDATE_TAGS,
        request=CandidateListInput,
        responses=responses(
            {
                200: success(
                    CandidateListOutput,
                    "A page of candidates; `next_cursor` fetches the next one.",
                    examples.LIST_RESPONSE,
                )
            }
        ),
        examples=[examples.LIST_REQUEST],
        description="The scope's candidates with one `status` (`pending` by default), "
        "newest first (ties by candidate id). A page holds at most `limit` candidates and "
        "stops before the one that would take its candidates past 1 MiB (proposal, reasons "
        "and references, as this response's JSON carries them, escapes included); it always "
        "holds at least one. `next_cursor` is "
        "opaque, null on the last page, and valid only with the same filters. Errors: 422 "
        "`invalid_request` for a bad field or a cursor issued for other filters.",
    )
    def post(self, request):
        data = self.validated(CandidateListInput)
        found = selectors.candidate_list(
            scope_id=data["scope_id"],
            status=data["status"],
            family=data.get("family"),
            cursor=data.get("cursor"),
            limit=data["limit"],
        )
        return self.respond(rendering.candidate_page(found))


class CandidateGetView(ApiView):
    operation = "get_artifact_candidate"
    role = Role.READ

    @extend_schema(
        operation_id="get_artifact_candidate",
        tags=CANDIDATE_TAGS,
        request=CandidateGetInput,
        responses=responses(
            {
                200: success(
                    ArtifactCandidateSchema,
                    "The candidate at its current version.",
                    examples.CANDIDATE_GET_RESPONSE,
                )
            },
            404,
            409,
            examples={409: [examples.CANDIDATE_CONFLICT]},
        ),
        examples=[examples.CANDIDATE_GET_REQUEST],
        description="The candidate's current version and status. Errors: 404 "
        "`candidate_not_found` when the scope has no such candidate; 409 "
        "`candidate_conflict` when `expected_version` is given and is no longer the "
        "current version; 422 `invalid_request` for a bad field.",
    )
    def post(self, request):
        data = self.validated(CandidateGetInput)
        found = selectors.candidate_get(
            scope_id=data["scope_id"],
            candidate_id=data["candidate_id"],
            expected_version=data.get("expected_version"),
        )
        return self.respond(rendering.candidate(found))


class CandidateApproveView(ReviewerView):
    operation = "approve_artifact_candidate"
    role = Role.DECIDE

    @extend_schema(
        operation_id="approve_artifact_candidate",
        parameters=[redacted_header_parameter(200)],
        tags=CANDIDATE_TAGS,
        request=CandidateApproveInput,
        responses=responses(
            {
                200: success(
                    ArtifactCandidateSchema,
                    "The candidate, `approved`, with the Experience revision it made as "
                    "`result_artifact`.",
                    examples.APPROVE_RESPONSE,
                )
            },
            403,
            404,
            409,
            examples={403: [REVIEWER_ONLY], 409: [examples.CANDIDATE_TERMINAL]},
        ),
        examples=[examples.APPROVE_REQUEST],
        description="Reviewer only. Creates (or revises the target) Experience in one "
        "transaction: from then on search and Context Packs find it. Errors: 403 "
        "`permission_denied` unless the token is the personal token of a user with the "
        "review permission (checked before the body); 404 `candidate_not_found`; 409 "
        "`candidate_terminal` when already decided, `candidate_conflict` for a stale "
        "`expected_version`, `revision_conflict` when the target moved on; 422 "
        "`invalid_request` for a bad field.",
    )
    def post(self, request):
        data = self.validated(CandidateApproveInput)
        found = services.candidate_approve(
            scope_id=data["scope_id"],
            candidate_id=data["candidate_id"],
            expected_version=data["expected_version"],
            reviewer=self.reviewer,
        )
        return with_redactions(self.respond(rendering.candidate(found)), found)


class CandidateRejectView(ReviewerView):
    operation = "reject_artifact_candidate"
    role = Role.DECIDE

    @extend_schema(
        operation_id="reject_artifact_candidate",
        parameters=[redacted_header_parameter(200)],
        tags=CANDIDATE_TAGS,
        request=CandidateRejectInput,
        responses=responses(
            {
                200: success(
                    ArtifactCandidateSchema,
                    "The candidate, `rejected`, with the reason as `decision_reason`.",
                    examples.REJECT_RESPONSE,
                )
            },
            403,
            404,
            409,
            examples={403: [REVIEWER_ONLY], 409: [examples.CANDIDATE_TERMINAL]},
        ),
        examples=[examples.REJECT_REQUEST],
        description="Reviewer only. Rejects with a required reason; nothing reaches search "
        "or packs. Errors: 403 `permission_denied` unless a reviewer's personal token "
        "(checked before the body); 404 `candidate_not_found`; 409 `candidate_terminal` "
        "when already decided, `candidate_conflict` for a stale `expected_version`; 422 "
        "`invalid_request` for a bad field (a blank reason included).",
    )
    def post(self, request):
        data = self.validated(CandidateRejectInput)
        found = services.candidate_reject(
            scope_id=data["scope_id"],
            candidate_id=data["candidate_id"],
            expected_version=data["expected_version"],
            reason=data["reason"],
            reviewer=self.reviewer,
        )
        return with_redactions(self.respond(rendering.candidate(found)), found)


class CandidateReviseView(ReviewerView):
    operation = "revise_artifact_candidate"
    role = Role.DECIDE

    @extend_schema(
        operation_id="revise_artifact_candidate",
        parameters=[redacted_header_parameter(200)],
        tags=CANDIDATE_TAGS,
        request=CandidateReviseInput,
        responses=responses(
            {
                200: success(
                    ArtifactCandidateSchema,
                    "The candidate at its new version, still `pending`.",
                    examples.REVISE_RESPONSE,
                )
            },
            403,
            404,
            409,
            examples={403: [REVIEWER_ONLY], 409: [examples.CANDIDATE_CONFLICT]},
        ),
        examples=[examples.REVISE_REQUEST],
        description="Reviewer only. Writes a new version of a pending candidate (a "
        "reviewer's edit before deciding); refs and reason left out keep the previous "
        "version's. Errors: 403 `permission_denied` unless a reviewer's personal token "
        "(checked before the body); 404 `candidate_not_found`, or `artifact_not_found` "
        "for an `artifact_refs` revision that does not exist; 409 `candidate_conflict` "
        "for a stale `expected_version`, `candidate_terminal` when already decided; 422 "
        "`invalid_request` for a bad field or a source never captured in the scope.",
    )
    def post(self, request):
        data = self.validated(CandidateReviseInput)
        found = services.candidate_revise(
            scope_id=data["scope_id"],
            candidate_id=data["candidate_id"],
            expected_version=data["expected_version"],
            proposal=Proposal.from_payload(data["proposal"]),
            source_refs=data.get("source_refs"),
            artifact_refs=data.get("artifact_refs"),
            reason=data.get("reason"),
            reviewer=self.reviewer,
        )
        return with_redactions(self.respond(rendering.candidate(found)), found)
