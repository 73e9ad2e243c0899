from drf_spectacular.utils import extend_schema

from contextpack import openapi_examples as examples
from contextpack import rendering
from contextpack.application import prepare_context
from contextpack.serializers import (
    PrepareContextInput,
    PreparedContextOutput,
    SessionContextInput,
)
from contextpack.session import session_context
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


class SessionContextView(ApiView):
    operation = "session_context"
    role = Role.READ

    @extend_schema(
        operation_id="session_context",
        tags=["context"],
        request=SessionContextInput,
        responses=responses(
            {
                200: success(
                    PreparedContextOutput,
                    "The pack to inject when a session starts, or `empty` when the scope has"
                    " nothing for it.",
                    examples.SESSION_RESPONSE,
                    examples.PREPARE_EMPTY,
                )
            }
        ),
        examples=[examples.SESSION_REQUEST],
        description="A small Context Pack for the start of a session (the agents'"
        " `SessionStart` hook, also after a compaction): there is no prompt yet, so it holds"
        " the scope's standing instructions (active Memory entries of kind `command`, then"
        " `convention`, most recently written first), the entries matching the subjects of"
        " the scope's most recent captured prompts, and the most recently approved"
        " Experience, in the same `powercontext.prepared-context.v1` value as"
        " `prepare_context` (trust wrapper, citations, byte budget). Read-only: it writes"
        " and captures nothing. Errors: 422 `invalid_request` for a bad field (`max_bytes`"
        " outside 512..8000 included).",
    )
    def post(self, request):
        data = self.validated(SessionContextInput)
        prepared = session_context(scope_id=data["scope_id"], max_bytes=data["max_bytes"])
        return self.respond(rendering.prepared_context(prepared))
