from drf_spectacular.utils import extend_schema

from contextpack.application import ScopedContextApplication, public_payload
from contextpack.serializers import PrepareContextInput, PreparedContextOutput
from powercontext.api.schema import responses
from powercontext.api.views import ApiView


class PrepareContextView(ApiView):
    operation = "prepare_context"

    @extend_schema(
        operation_id="prepare_context",
        tags=["context"],
        request=PrepareContextInput,
        responses=responses({200: PreparedContextOutput}),
        description="A bounded, cited, explicitly untrusted Context Pack for the prompt "
        "(RFC 0028). `content_bytes` is the UTF-8 length of `content` and never exceeds "
        "`max_bytes`; `empty` has `content: null`.",
    )
    def post(self, request):
        data = self.validated(PrepareContextInput)
        prepared = ScopedContextApplication().prepare(
            scope_id=data["scope_id"], query=data["query"], max_bytes=data["max_bytes"]
        )
        return self.respond(public_payload(prepared))
