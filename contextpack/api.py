from drf_spectacular.utils import extend_schema

from contextpack import openapi_examples as examples
from contextpack import rendering
from contextpack.application import prepare_context
from contextpack.serializers import PrepareContextInput, PreparedContextOutput
from powercontext.api.auth import Role
from powercontext.api.schema import responses, success
from powercontext.api.views import ApiView


class PrepareContextView(ApiView):
    operation = "prepare_context"
    role = Role.READ

    @extend_schema(
        operation_id="prepare_context",
        tags=["context"],
        request=PrepareContextInput,
        responses=responses(
            {
                200: success(
                    PreparedContextOutput,
                    "The pack to inject before the prompt, or `empty` when nothing matches.",
                    examples.PREPARE_RESPONSE,
                    examples.PREPARE_EMPTY,
                )
            }
        ),
        examples=[examples.PREPARE_REQUEST],
        description="A bounded, cited, explicitly untrusted Context Pack for the prompt "
        "(RFC 0028): the active Memory entries and approved Experience that match it, "
        "each with its citation. `content_bytes` is the UTF-8 length of `content` and "
        "never exceeds `max_bytes`; `empty` has `content: null`. Read-only: it writes "
        "and captures nothing. Errors: 422 `invalid_request` for a bad field (`max_bytes` "
        "out of range included).",
    )
    def post(self, request):
        data = self.validated(PrepareContextInput)
        prepared = prepare_context(
            scope_id=data["scope_id"], query=data["query"], max_bytes=data["max_bytes"]
        )
        return self.respond(rendering.prepared_context(prepared))
