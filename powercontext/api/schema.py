"""OpenAPI pieces shared by every operation: the bearer scheme and the error shape; and
the schema view, which generates the document once per process."""

import threading

from django.http import HttpResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework import serializers

from powercontext.api.openapi_examples import UNAUTHORIZED


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "powercontext.api.auth.BearerAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer"}


class StrictSerializerScheme(OpenApiSerializerExtension):
    """Request bodies reject unknown fields (422), so their schemas say so: a client or a
    fuzzer that follows the document then sends only what the server accepts."""

    target_class = "powercontext.api.fields.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema


class FieldErrorSchema(serializers.Serializer):
    """One invalid field: its dotted path in the body (``proposal.lesson``,
    ``source_refs.0``; ``body`` for the body as a whole) and what is wrong with it."""

    field = serializers.CharField()
    message = serializers.CharField()


class ErrorDetailsSchema(serializers.Serializer):
    """Machine-readable details: ``errors`` for ``invalid_request``."""

    errors = FieldErrorSchema(many=True, required=False)
    reason = serializers.ChoiceField(
        choices=["no_space", "read_only"],
        required=False,
        help_text="insufficient_storage only: why the storage refused the write.",
    )


class ErrorBodySchema(serializers.Serializer):
    """``code`` is stable (branch on it); ``message`` is for people and may change."""

    code = serializers.CharField()
    message = serializers.CharField()
    details = ErrorDetailsSchema(allow_null=True)


class ErrorResponseSchema(serializers.Serializer):
    """Every error, whatever the status: ``{"error": {code, message, details}}``."""

    error = ErrorBodySchema()


_ERROR_DESCRIPTIONS = {
    401: "unauthorized: a valid bearer token is required",
    403: "permission_denied",
    404: "not found (artifact_not_found, memory_not_found, candidate_not_found)",
    409: "conflict (revision_conflict, source_conflict, memory_entry_inactive, "
    "candidate_conflict, candidate_terminal)",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request (details.errors) or capability_not_supported",
    500: "internal_error",
    507: "insufficient_storage: the server's storage is full (details.reason no_space) or its "
    "database read-only (read_only); nothing of the request was written, earlier writes are "
    "kept. Retry once /health/ready is ready again.",
}


def success(serializer, description: str, *examples: OpenApiExample) -> OpenApiResponse:
    """A success answer with what it means and its examples (Swagger UI shows both)."""
    return OpenApiResponse(serializer, description=description, examples=list(examples))


def responses(
    ok: dict, *errors: int, examples: dict[int, list[OpenApiExample]] | None = None
) -> dict:
    """An operation's responses: ``ok`` plus the error shape for ``errors`` and the
    errors every ``/v1/`` operation can answer, with ``examples`` of those errors (a 401
    example everywhere)."""
    examples = {401: [UNAUTHORIZED], **(examples or {})}
    result = dict(ok)
    for status in sorted({401, 413, 415, 422, 500, 507, *errors}):
        result[status] = OpenApiResponse(
            ErrorResponseSchema,
            description=_ERROR_DESCRIPTIONS[status],
            examples=examples.get(status, []),
        )
    return result


class CachedSchemaView(SpectacularAPIView):
    """``/api/schema/``, generated and rendered once per process and format.

    It is unauthenticated, and generating it costs about 0.1 s of a worker thread (YAML
    rendering 40 ms more): answered afresh, anyone on the machine could keep the threads
    busy with it. The document depends on the code only: the API is unversioned and in
    English, so the ``version`` and ``lang`` parameters are not honoured (they would also
    make the cache unbounded).
    """

    _lock = threading.Lock()
    _rendered: dict[type, tuple[bytes, str, str]] = {}

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        renderer = request.accepted_renderer
        with self._lock:
            cached = self._rendered.get(type(renderer))
            if cached is None:
                generator = self.generator_class(urlconf=self.urlconf, patterns=self.patterns)
                schema = generator.get_schema(request=None, public=self.serve_public)
                body = renderer.render(schema, renderer.media_type, self.get_renderer_context())
                cached = (body, renderer.media_type, self._get_filename(request, None))
                self._rendered[type(renderer)] = cached
        body, media_type, filename = cached
        response = HttpResponse(body, content_type=f"{media_type}; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="{filename}"'
        return response


_WARNING_HEADER_COMPONENT = "PowerContextWarning"


def document_scope_warning(result, generator, request, public):
    """drf-spectacular postprocessing hook: every successful answer of an operation that
    takes a ``scope_id`` may carry the ``PowerContext-Warning`` header
    (``powercontext.scope_warnings``)."""
    from powercontext import scope_warnings

    components = result.setdefault("components", {})
    components.setdefault("headers", {})[_WARNING_HEADER_COMPONENT] = {
        "description": (
            "Present when the request's scope_id is probably a mistake: it looks like a "
            "URL, holds spaces, or names a scope that holds nothing yet one edit away from "
            "an existing one. The request was served as asked all the same. The value is "
            "`<code>: <sentence>`, the code one of "
            + ", ".join(f"`{code}`" for code in scope_warnings.CODES)
            + "; ids in the sentence are ASCII-escaped."
        ),
        "schema": {"type": "string"},
    }
    schemas = components.get("schemas", {})
    for methods in result.get("paths", {}).values():
        for operation in methods.values():
            if not isinstance(operation, dict) or not _takes_scope(operation, schemas):
                continue
            for status, response in operation.get("responses", {}).items():
                if str(status).startswith("2"):
                    response.setdefault("headers", {})[scope_warnings.HEADER] = {
                        "$ref": f"#/components/headers/{_WARNING_HEADER_COMPONENT}"
                    }
    return result


def _takes_scope(operation, schemas) -> bool:
    if any(parameter.get("name") == "scope_id" for parameter in operation.get("parameters", [])):
        return True
    for content in operation.get("requestBody", {}).get("content", {}).values():
        reference = content.get("schema", {}).get("$ref", "")
        schema = schemas.get(reference.rsplit("/", 1)[-1], {})
        if "scope_id" in schema.get("properties", {}):
            return True
    return False
