"""The base of every ``/v1/`` view: bearer auth, strict JSON in, the error shape out."""

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from powercontext import scope_warnings
from powercontext.api.auth import BearerAuthentication, IsCaller, Role
from powercontext.api.redacted import with_redactions


class ApiView(APIView):
    authentication_classes = [BearerAuthentication]
    # Every view names its operation (its OpenAPI operation id) and the role the caller
    # needs for it (``powercontext.api.auth``); one without a role is refused.
    permission_classes = [IsCaller]
    operation = ""
    role: Role | None = None
    # An operation that is also an MCP tool names its input serializer, puts its one
    # service or selector call in ``perform`` and its rendering in ``render``: the view's
    # ``post`` (``operate``) and the tool (``powercontext.api.mcp.run``) both run these.
    input_serializer: type[Serializer] | None = None
    # No OPTIONS self-description: each operation is its documented method alone (the
    # OpenAPI document describes it), anything else is 405 ``method_not_allowed``.
    metadata_class = None

    # DRF's response is in reference cycles: its renderer context holds the response
    # itself (set when it renders) and the view, which holds the response. So a page (up
    # to a few MB: the entries, then their JSON) lived until the cyclic collector's next
    # full pass, seconds or minutes later, instead of going once it was sent; with four
    # threads rendering pages, the server stayed 40 MB larger (docs/RELIABILITY.md,
    # "Memory at rest"). Both links are dropped once they are no longer needed.

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().dispatch(request, *args, **kwargs)
        self.response = None
        return response

    # A likely mistake in the request's scope id (powercontext.scope_warnings), found
    # before the operation writes and sent back in a header with a successful answer.
    scope_warning: str | None = None

    def finalize_response(self, request: Any, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response):
            response.add_post_render_callback(_forget_renderer_context)
        if self.scope_warning and 200 <= response.status_code < 300:
            response[scope_warnings.HEADER] = self.scope_warning
        return response

    def validated(self, serializer_class: type, data: Any | None = None) -> dict[str, Any]:
        serializer = serializer_class(data=self.request.data if data is None else data)
        serializer.is_valid(raise_exception=True)
        scope_id = serializer.validated_data.get("scope_id")
        if isinstance(scope_id, str):
            self.scope_warning = scope_warnings.scope_warning(scope_id)
        return serializer.validated_data

    @staticmethod
    def respond(payload: Any, status: int = 200) -> Response:
        return Response(payload, status=status)

    @staticmethod
    def perform(data: dict[str, Any]) -> Any:
        """The operation's one service or selector call, on validated ``data``."""
        raise NotImplementedError

    @staticmethod
    def render(result: Any) -> Any:
        """``perform``'s result as the operation's response body."""
        raise NotImplementedError

    def operate(self, status: int = 200) -> Response:
        """Validate with ``input_serializer``, ``perform``, ``render``: the operation."""
        if self.input_serializer is None:
            raise ImproperlyConfigured(f"{type(self).__name__} has no input_serializer.")
        data = self.validated(self.input_serializer)
        result = self.perform(data)
        return with_redactions(self.respond(self.render(result), status=status), result)


def _forget_renderer_context(response: Response) -> None:
    """Once rendered, the response needs its renderer context no more."""
    response.renderer_context = None
