"""The one error shape (DESIGN.md §4): ``{"error": {"code", "message", "details"}}``.

DRF exceptions and the domain errors of ``powercontext.exceptions`` are both mapped here,
and so is storage that refuses writes (no space, a read-only database: 507
``insufficient_storage``, also reported by readiness until it takes writes again).
Anything unexpected becomes a 500 ``internal_error`` whose body says nothing about the
request; the log records the exception type and where it happened, not its message
(which could quote user data).
"""

import logging
import traceback
from typing import Any

from django.http import JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response

from powercontext import exceptions, storage
from powercontext.exceptions import InsufficientStorage, PowerContextError

logger = logging.getLogger("powercontext.errors")

# Set on every error response built here: the metrics' error category
# (``server.middleware``) without reading the body back.
ERROR_CODE_ATTRIBUTE = "powercontext_error_code"


def error_code_of(response) -> str | None:
    """The API error code of a response built here, else None."""
    return getattr(response, ERROR_CODE_ATTRIBUTE, None)


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


def flatten_errors(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    """DRF's nested error detail as ``[{field: "a.b.0.c", message}]``."""
    if isinstance(detail, dict):
        errors = []
        for key, value in detail.items():
            if key in ("non_field_errors", "__all__"):
                errors.extend(flatten_errors(value, prefix or "body"))
            else:
                errors.extend(flatten_errors(value, f"{prefix}.{key}" if prefix else str(key)))
        return errors
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return [{"field": prefix or "body", "message": str(item)} for item in detail]
        errors = []
        for index, item in enumerate(detail):
            errors.extend(flatten_errors(item, f"{prefix}.{index}" if prefix else str(index)))
        return errors
    return [{"field": prefix or "body", "message": str(detail)}]


_DRF_CODES: list[tuple[type[drf.APIException], int, str]] = [
    (drf.NotAuthenticated, 401, "unauthorized"),
    (drf.AuthenticationFailed, 401, "unauthorized"),
    (drf.PermissionDenied, 403, "permission_denied"),
    (drf.NotFound, 404, "not_found"),
    (drf.MethodNotAllowed, 405, "method_not_allowed"),
    (drf.UnsupportedMediaType, 415, "unsupported_media_type"),
    (drf.NotAcceptable, 406, "not_acceptable"),
    (drf.Throttled, 429, "throttled"),
]
# The codes answered outside the domain errors: DRF's refusals above, a body DRF could
# not parse, a body too large (the server's limit), no such route, an unexpected failure.
_PROTOCOL_CODES = frozenset(
    {code for _, _, code in _DRF_CODES}
    | {"invalid_request", "payload_too_large", "not_found", "internal_error"}
)


def error_codes() -> frozenset[str]:
    """Every code the API answers with (DESIGN.md §4), a closed set: the protocol's and
    each domain error's, read from its class (``powercontext.exceptions.error_codes``)."""
    return _PROTOCOL_CODES | exceptions.error_codes()


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    status, body = error_body_for(exc)
    response = Response(body, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="powercontext"'
    setattr(response, ERROR_CODE_ATTRIBUTE, body["error"]["code"])
    return response


def error_body_for(exc: Exception) -> tuple[int, dict[str, Any]]:
    """(HTTP status, error body) for ``exc``: the one mapping, for the API's exception
    handler and the MCP tools alike. A server-side failure (500 and up, a domain error
    such as a broken index invariant included) is logged by its type only."""
    if isinstance(exc, PowerContextError):
        if exc.status >= 500:
            log_internal_error(exc)
        return exc.status, error_body(exc.code, exc.message, exc.details)
    if isinstance(exc, drf.ValidationError):
        return 422, error_body(
            "invalid_request", "The request is invalid.", {"errors": flatten_errors(exc.detail)}
        )
    if isinstance(exc, drf.ParseError):
        return 422, error_body(
            "invalid_request",
            "The request body is not valid JSON.",
            {"errors": [{"field": "body", "message": str(exc.detail)}]},
        )
    for exc_type, status, code in _DRF_CODES:
        if isinstance(exc, exc_type):
            if status == 401:
                return 401, error_body("unauthorized", "A valid bearer token is required.")
            return status, error_body(code, str(exc.detail))
    if isinstance(exc, drf.APIException):
        return exc.status_code, error_body("invalid_request", str(exc.detail))
    reason = storage.failure_reason(exc)
    if reason is not None:
        storage.failures.record(reason)
        logger.error("storage refused a write: %s (%s)", reason, type(exc).__name__)
        refused = InsufficientStorage(reason)
        return refused.status, error_body(refused.code, refused.message, refused.details)
    log_internal_error(exc)
    return 500, error_body("internal_error", "Internal error.")


def log_internal_error(exc: BaseException) -> None:
    """Log where an unexpected error happened without its message or locals."""
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("internal error %s\n%s", type(exc).__name__, frames)


def json_error(status: int, code: str, message: str) -> JsonResponse:
    response = JsonResponse(
        error_body(code, message), status=status, json_dumps_params={"ensure_ascii": False}
    )
    setattr(response, ERROR_CODE_ATTRIBUTE, code)
    return response


def not_found_view(request, exception=None) -> JsonResponse:
    return json_error(404, "not_found", "No such route.")


def server_error_view(request) -> JsonResponse:
    return json_error(500, "internal_error", "Internal error.")
