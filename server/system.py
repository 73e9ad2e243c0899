"""Health, capabilities and source capture."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from powercontext.api import openapi_examples as examples
from powercontext.api.auth import Role
from powercontext.api.fields import (
    StrictCharField,
    StrictSerializer,
    scope_id_field,
)
from powercontext.api.redacted import redacted_header_parameter, with_redactions
from powercontext.api.schema import responses, success
from powercontext.api.views import ApiView
from powercontext.capabilities import capabilities
from powercontext.chain import canonical_json
from powercontext.sources import source_capture
from server.health import readiness

SOURCE_METADATA_MAX_BYTES = 16 * 1024


class HealthCheckSchema(serializers.Serializer):
    """One readiness check: ``ok``, or ``failing`` with a ``detail`` that says why."""

    status = serializers.ChoiceField(choices=["ok", "failing"])
    detail = serializers.CharField(required=False)


class HealthOutput(serializers.Serializer):
    """``live`` (the process answers) or ``ready`` / ``not_ready`` with each check."""

    status = serializers.ChoiceField(choices=["live", "ready", "degraded", "not_ready"])
    checks = serializers.DictField(child=HealthCheckSchema())


class _PublicView(APIView):
    """Health needs no token: load balancers and supervisors probe it."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    metadata_class = None  # as ApiView: GET alone


class HealthLiveView(_PublicView):
    @extend_schema(
        operation_id="health_live",
        tags=["health"],
        responses={200: success(HealthOutput, "The process answers.", examples.HEALTH_LIVE)},
        description="Liveness for a supervisor: 200 as long as the process serves HTTP, "
        "whatever the database. No token. Restart the process if this fails.",
    )
    def get(self, request: Request) -> Response:
        return Response({"status": "live", "checks": {}})


class HealthReadyView(_PublicView):
    @extend_schema(
        operation_id="health_ready",
        tags=["health"],
        responses={
            200: success(
                HealthOutput,
                "Every check passed (`ready`), or only `vector_index` failed (`degraded`).",
                examples.HEALTH_READY,
            ),
            503: success(HealthOutput, "A check failed: see `checks`.", examples.HEALTH_NOT_READY),
        },
        description="Readiness for a load balancer: 200 `ready` when the database "
        "answers, every migration is applied and the full-text indexes are consistent; "
        "200 `degraded` when only `vector_index` fails (the embedding model cannot be "
        "loaded, e.g. a file failing its digest: search answers lexically); else 503 "
        "`not_ready` with the failing check and why. No token.",
    )
    def get(self, request: Request) -> Response:
        report = readiness()
        return Response(report, status=503 if report["status"] == "not_ready" else 200)


class CapabilitiesOutput(serializers.Serializer):
    """What this server offers: source types, artifact families, search modes and
    Context Pack versions."""

    source_types = serializers.ListField(child=serializers.CharField())
    artifact_families = serializers.ListField(child=serializers.CharField())
    search_modes = serializers.ListField(child=serializers.CharField())
    context_versions = serializers.ListField(child=serializers.CharField())
    memory_extraction = serializers.BooleanField()
    experience_generation = serializers.BooleanField()


class CapabilitiesView(ApiView):
    operation = "capabilities"
    role = Role.READ

    @extend_schema(
        operation_id="capabilities",
        tags=["system"],
        responses=responses(
            {200: success(CapabilitiesOutput, "This server's capabilities.", examples.CAPABILITIES)}
        ),
        description="What this server offers, so a client can choose before it asks: "
        "e.g. a `search_modes` without `vector` means `POST /v1/memory/search` answers "
        "422 `capability_not_supported` for it. Errors: 401 without a valid token.",
    )
    def get(self, request: Request) -> Response:
        return self.respond(capabilities())


class SourceContentInput(StrictSerializer):
    """A content source (a prompt) to capture under a caller-chosen ``source_id``, with
    optional JSON ``metadata`` (at most 16 KiB). Rejects unknown fields."""

    scope_id = scope_id_field()
    source_id = StrictCharField(non_blank=True, min_length=1, max_length=256)
    content = StrictCharField(min_length=1, max_length=200_000)
    metadata = serializers.DictField(required=False, allow_null=True)

    def validate_metadata(self, value: dict[str, object] | None) -> object:
        if value is None:
            return None
        # The raw object, not DictField's copy: values stay exactly as sent.
        raw = self.initial_data["metadata"]
        try:
            canonical = canonical_json(raw)
        except ValueError as error:
            # RFC 8785 has no form for integers beyond 2**53 - 1 in magnitude.
            raise serializers.ValidationError(
                "Must be JSON that RFC 8785 can canonicalise (integers within 2**53 - 1)."
            ) from error
        if len(canonical.encode("utf-8")) > SOURCE_METADATA_MAX_BYTES:
            raise serializers.ValidationError("Must be at most 16 KiB as JSON.")
        return raw


class SourceReferenceOutput(serializers.Serializer):
    """The captured source, as a proposal's ``source_refs`` names it."""

    name = serializers.ChoiceField(choices=["content"])
    source_id = serializers.CharField()


class SourceContentOutput(serializers.Serializer):
    """The capture was accepted, at ``position`` in the scope's capture order."""

    status = serializers.ChoiceField(choices=["accepted"])
    source = SourceReferenceOutput()
    position = serializers.IntegerField(min_value=1)


class SourceContentView(ApiView):
    operation = "capture_content_source"
    role = Role.WRITE

    @extend_schema(
        operation_id="capture_content_source",
        parameters=[redacted_header_parameter(202)],
        tags=["sources"],
        request=SourceContentInput,
        responses=responses(
            {
                202: success(
                    SourceContentOutput,
                    "Captured (or already captured with this payload).",
                    examples.CAPTURE_RESPONSE,
                )
            },
            403,
            409,
            examples={403: [examples.AGENT_ONLY], 409: [examples.SOURCE_CONFLICT]},
        ),
        examples=[examples.CAPTURE_REQUEST],
        description="Capture a content source (a prompt) so that an Experience proposal "
        "can cite it as evidence (`source_refs`). What is stored is not quite what was "
        "sent: `<private>...</private>` spans are cut from `content`, and every "
        "credential-shaped string in `content` and in `metadata`'s strings (API keys, "
        "tokens, passwords in assignments and URLs, private keys) is replaced by a typed "
        "marker such as `[redacted:aws-secret-key]`; the `PowerContext-Redacted` header "
        "counts them by kind. The "
        "same id and payload again answers 202 with the original position (safe to "
        "retry), as does an id whose entry has since been purged. Errors: 403 `permission_denied` "
        "for a person's token; 409 `source_conflict` for a different payload under an id "
        "already used; 422 `invalid_request` for a bad field or metadata over 16 KiB.",
    )
    def post(self, request: Request) -> Response:
        data = self.validated(SourceContentInput)
        captured = source_capture(
            scope_id=data["scope_id"],
            source_id=data["source_id"],
            content=data["content"],
            metadata=data.get("metadata"),
        )
        return with_redactions(self.respond(captured.as_payload(), status=202), captured)
