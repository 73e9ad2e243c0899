"""Running an HTTP operation as an MCP tool: the same role, serializer, call and rendering.

A family offers an operation as a tool (``memory/mcp.py``, ``experience/mcp.py``) by
writing a function with the tool's advertised arguments that hands them to :func:`run`
with the operation's view; the server composes the families' tools
(``server/mcp/server.py``). ``run`` checks that the caller holds the view's ``role``,
validates with the view's ``input_serializer``, calls its ``perform`` and its ``render``:
so a tool answers the same results and the same errors as its HTTP operation. A result is
the HTTP response body, as structured content and as its JSON text; an error is an
``isError`` result whose structured content is the HTTP error body, ``{"error": {"code",
"message", "details"}}``.

The tools are synchronous functions: the SDK runs them on a worker thread, where Django's
ORM may be used (never on the event loop). Each call closes that thread's database
connections when it is done, so a long-lived server holds none between calls.
"""

import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

from django.db import connections
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from rest_framework.exceptions import NotAuthenticated

from powercontext.api.auth import AGENT, Caller, caller_for, permit
from powercontext.api.errors import error_body_for
from powercontext.api.redacted import redacted_header
from powercontext.api.views import ApiView

# Where a write tool's answer says what it redacted (``result``).
REDACTED_META = "powercontext/redacted"

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def write(*, destructive: bool, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=False,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


# -- running one call ----------------------------------------------------------------


def _dumps(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def result(payload: dict[str, Any], redacted: Mapping[str, int] | None = None) -> CallToolResult:
    """The tool's answer: the HTTP operation's body, as text and as structured content.
    A write's redactions go in ``_meta`` (``powercontext/redacted``, as the HTTP header
    says them), never in the body, whose shape is the operation's."""
    meta = None if redacted is None else {REDACTED_META: redacted_header(redacted)}
    return CallToolResult(
        content=[TextContent(type="text", text=_dumps(payload))],
        structured_content=payload,
        _meta=meta,
    )


def error_result(body: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=_dumps(body))],
        structured_content=body,
        is_error=True,
    )


def _arguments(ctx: Context, passed: dict[str, Any]) -> Any:
    """The arguments exactly as the client sent them (so an omitted field gets the HTTP
    default, and an unknown one is refused as over HTTP); ``passed`` when called in-process
    without a request."""
    try:
        params = ctx.request_context.params
    except ValueError:
        return {name: value for name, value in passed.items() if value is not None}
    if params is None:
        return {}
    return params.get("arguments") or {}


def caller(ctx: Context) -> Caller:
    """Who calls: over HTTP, from the request's bearer token exactly as ``/v1/`` decides
    (``/mcp`` has already refused a missing or wrong one); over stdio, the agent (the
    process the agent started itself)."""
    try:
        request = ctx.request_context.request
    except ValueError:
        return AGENT
    if request is None:
        return AGENT
    header = request.headers.get("authorization", "")
    found = caller_for(header.encode("latin-1", "replace"))
    if found is None:
        raise NotAuthenticated()
    return found


def run(view: type[ApiView], ctx: Context, passed: dict[str, Any]) -> CallToolResult:
    """``view``'s operation for the tool's caller: check the caller holds the view's role
    (as over HTTP), validate with its serializer, ``perform`` and ``render`` as the view
    does; on a worker thread, whose database connections are closed afterwards."""
    try:
        permit(caller(ctx), view.role, view.operation)
        serializer: Any = view.input_serializer  # set on every tool's view (``tool``)
        validator = serializer(data=_arguments(ctx, passed))
        validator.is_valid(raise_exception=True)
        value = view.perform(validator.validated_data)
        return result(view.render(value), getattr(value, "redacted", None))
    except Exception as exc:  # every failure becomes the API's error body, never a trace
        return error_result(error_body_for(exc)[1])
    finally:
        connections.close_all()


# -- describing a tool ---------------------------------------------------------------
#
# A tool function gives every argument a Python default so that pydantic never refuses a
# call before the serializer has seen it (a missing field is the serializer's "This field
# is required.", as over HTTP); the advertised schema's "required" list comes from the
# serializer.


def tool(
    fn: Callable[..., CallToolResult],
    view: type[ApiView],
    title: str,
    annotations: ToolAnnotations,
) -> Tool:
    """The tool ``fn`` (named for ``view``'s operation), advertising exactly the fields its
    view's serializer requires."""
    if fn.__name__ != view.operation or view.input_serializer is None:
        raise TypeError(f"{fn.__name__} does not run {view.__name__}'s operation")
    described = Tool.from_function(
        fn,
        title=title,
        description=inspect.cleandoc(fn.__doc__ or ""),
        annotations=annotations,
        structured_output=False,
    )
    required = [name for name, field in view.input_serializer().fields.items() if field.required]
    properties = described.parameters["properties"]
    for name, schema in properties.items():
        # Python's None default is an implementation detail, not the contract's default.
        if name in required or (schema.get("default", 0) is None and not _nullable(schema)):
            schema.pop("default", None)
    described.parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return described


def _nullable(schema: dict[str, Any]) -> bool:
    kinds = schema.get("type")
    return (isinstance(kinds, list) and "null" in kinds) or any(
        option.get("type") == "null" for option in schema.get("anyOf", [])
    )
