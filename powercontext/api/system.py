"""Health, capabilities and source capture."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from powercontext.api.fields import StrictCharField, StrictSerializer, scope_id_field
from powercontext.api.schema import responses
from powercontext.api.views import ApiView
from powercontext.artifacts import canonical_json
from powercontext.capabilities import capabilities
from powercontext.health import readiness
from powercontext.sources import source_capture

SOURCE_METADATA_MAX_BYTES = 16 * 1024


class HealthCheckSchema(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "failing"])
    detail = serializers.CharField(required=False)


class HealthOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["live", "ready", "degraded", "not_ready"])
    checks = serializers.DictField(child=HealthCheckSchema())


class _PublicView(APIView):
    """Health needs no token: load balancers and supervisors probe it."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    metadata_class = None  # as ApiView: GET alone


class HealthLiveView(_PublicView):
    @extend_schema(operation_id="health_live", tags=["health"], responses={200: HealthOutput})
    def get(self, request):
        return Response({"status": "live", "checks": {}})


class HealthReadyView(_PublicView):
    @extend_schema(
        operation_id="health_ready",
        tags=["health"],
        responses={200: HealthOutput, 503: HealthOutput},
    )
    def get(self, request):
        report = readiness()
        return Response(report, status=200 if report["status"] == "ready" else 503)


class CapabilitiesOutput(serializers.Serializer):
    source_types = serializers.ListField(child=serializers.CharField())
    artifact_families = serializers.ListField(child=serializers.CharField())
    search_modes = serializers.ListField(child=serializers.CharField())
    context_versions = serializers.ListField(child=serializers.CharField())
    memory_extraction = serializers.BooleanField()
    experience_generation = serializers.BooleanField()


class CapabilitiesView(ApiView):
    operation = "capabilities"

    @extend_schema(
        operation_id="capabilities", tags=["system"], responses=responses({200: CapabilitiesOutput})
    )
    def get(self, request):
        return self.respond(capabilities())


class SourceContentInput(StrictSerializer):
    scope_id = scope_id_field()
    source_id = StrictCharField(non_blank=True, min_length=1, max_length=256)
    content = StrictCharField(min_length=1, max_length=200_000)
    metadata = serializers.DictField(required=False, allow_null=True)

    def validate_metadata(self, value):
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
    name = serializers.ChoiceField(choices=["content"])
    source_id = serializers.CharField()


class SourceContentOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["accepted"])
    source = SourceReferenceOutput()
    position = serializers.IntegerField(min_value=1)


class SourceContentView(ApiView):
    operation = "capture_content_source"

    @extend_schema(
        operation_id="capture_content_source",
        tags=["sources"],
        request=SourceContentInput,
        responses=responses({202: SourceContentOutput}, 403, 409),
        description="Capture a content source (a prompt). The same id and payload again "
        "answers 202 with the original position; a different payload is 409.",
    )
    def post(self, request):
        data = self.validated(SourceContentInput)
        captured = source_capture(
            scope_id=data["scope_id"],
            source_id=data["source_id"],
            content=data["content"],
            metadata=data.get("metadata"),
        )
        return self.respond(captured.as_payload(), status=202)
