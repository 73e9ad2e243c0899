"""Typed errors for the API's error shape, ``{"error": {"code", "message", "details"}}``.

Catch ``PowerContextError`` for everything; a subclass per thing a caller reacts to:
``Conflict`` (re-read and retry), ``NotFound``, ``Unauthorized`` / ``PermissionDenied``
(fix the token), ``InvalidRequest`` with ``field_errors`` (fix the call), ``Unavailable``
(the server is down, not ready, or did not answer in time: try later).
"""

from typing import Any


class PowerContextError(Exception):
    """An error answer from the server, or no usable answer at all.

    ``code`` is the API's error code (``revision_conflict``, ``memory_not_found``, ...),
    ``status`` the HTTP status (None when there was no response), ``details`` the error's
    details object, ``request_id`` the server's ``X-PowerContext-Request-ID``.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        status: int | None = None,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.details = details
        self.request_id = request_id

    def __str__(self) -> str:
        where = f" (HTTP {self.status})" if self.status is not None else ""
        return f"{self.code}: {self.message}{self._because()}{where}"

    def _because(self) -> str:
        """What the message leaves to ``details``, when it is what the reader needs."""
        return ""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
            f"message={self.message!r})"
        )


class Unauthorized(PowerContextError):
    """401: missing or wrong bearer token."""


class PermissionDenied(PowerContextError):
    """403: the token is valid but may not do this (e.g. the agent token deciding a
    candidate, which needs a reviewer's token)."""


class NotFound(PowerContextError):
    """404: ``artifact_not_found``, ``memory_not_found``, ``candidate_not_found``, or
    ``not_found`` (no such route: the server is older than this client)."""


class Conflict(PowerContextError):
    """409: ``revision_conflict``, ``source_conflict``, ``memory_entry_inactive``,
    ``candidate_conflict``, ``candidate_terminal``. Re-read, then decide."""


class InvalidRequest(PowerContextError):
    """422 ``invalid_request``. ``field_errors`` lists ``(field, message)`` with ``field``
    a dotted path (``citation.entry_id``; ``body`` for the body as a whole)."""

    # The fields a message names; more are summed up (a body may hold hundreds).
    SHOWN_FIELD_ERRORS = 5

    @property
    def field_errors(self) -> list[tuple[str, str]]:
        errors = (self.details or {}).get("errors") or []
        return [
            (str(item.get("field", "body")), str(item.get("message", "")))
            for item in errors
            if isinstance(item, dict)
        ]

    def _because(self) -> str:
        # "The request is invalid." alone does not say what to fix: the fields do.
        found = self.field_errors
        if not found:
            return ""
        shown = "; ".join(
            f"{field}: {reason}" for field, reason in found[: self.SHOWN_FIELD_ERRORS]
        )
        more = len(found) - self.SHOWN_FIELD_ERRORS
        return f" {shown}" + (f"; and {more} more" if more > 0 else "")


class CapabilityNotSupported(PowerContextError):
    """422 ``capability_not_supported`` (e.g. search ``mode="vector"``)."""


class PayloadTooLarge(PowerContextError):
    """413 ``payload_too_large``."""


class Unavailable(PowerContextError):
    """The server could not be used: 503 (``runtime_not_ready``), a connection error, or
    no answer in time (``Timeout``)."""


class Timeout(Unavailable):
    """No answer within the client's timeout. For a write, whether it happened is unknown:
    re-read before writing again."""


class ServerError(PowerContextError):
    """500 ``internal_error`` (or another 5xx)."""


class UnexpectedResponse(PowerContextError):
    """A response that is not the API's (not JSON, or not its shape): a proxy, or not a
    PowerContext server at all."""


_BY_CODE: dict[str, type[PowerContextError]] = {
    "capability_not_supported": CapabilityNotSupported,
    "invalid_request": InvalidRequest,
}

_BY_STATUS: dict[int, type[PowerContextError]] = {
    401: Unauthorized,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: InvalidRequest,
    503: Unavailable,
}


def error_class(status: int, code: str) -> type[PowerContextError]:
    """Which exception an error answer becomes: by code where the status is shared (422),
    else by status; any other 5xx is a ServerError."""
    if status == 422 and code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return PowerContextError
