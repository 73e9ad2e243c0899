"""What the sync and the async client share: configuration, the operation table, request
bodies, retry policy and turning responses into results or typed errors.

No Django here (nor anything of the server): the client is for agents and scripts.
"""

import json
import os
from dataclasses import dataclass
from typing import Any

import httpx

from powercontext_client import errors

DEFAULT_URL = "http://127.0.0.1:8000"
URL_ENV = "POWERCONTEXT_URL"
TOKEN_ENV = "POWERCONTEXT_API_TOKEN"  # noqa: S105  (the variable's name)
DEFAULT_TIMEOUT_SECONDS = 10.0
# An idempotent call is tried at most 1 + DEFAULT_MAX_RETRIES times.
DEFAULT_MAX_RETRIES = 2
_BACKOFF_SECONDS = 0.25
_BACKOFF_CAP_SECONDS = 2.0
REQUEST_ID_HEADER = "X-PowerContext-Request-ID"
USER_AGENT = "powercontext-client/0.1.0"


@dataclass(frozen=True)
class Operation:
    """One HTTP operation. ``idempotent`` ones (reads, source capture, which is idempotent
    by source id, and prepare) may be retried; writes never are, since a lost answer
    does not say whether the write happened."""

    name: str
    method: str
    path: str
    idempotent: bool
    ok: tuple[int, ...] = (200,)


def _op(name: str, path: str, *, idempotent: bool, method: str = "POST", ok=(200,)) -> Operation:
    return Operation(name, method, path, idempotent, tuple(ok))


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        _op("health_live", "/health/live", method="GET", idempotent=True),
        # Not ready is an answer, not an error: the body says which check failed.
        _op("health_ready", "/health/ready", method="GET", idempotent=True, ok=(200, 503)),
        _op("capabilities", "/v1/capabilities", method="GET", idempotent=True),
        _op("capture_content_source", "/v1/sources/content", idempotent=True, ok=(202,)),
        _op("prepare_context", "/v1/context/prepare", idempotent=True),
        _op("session_context", "/v1/context/session", idempotent=True),
        _op("remember_memory", "/v1/memory/remember", idempotent=False),
        _op("search_memory", "/v1/memory/search", idempotent=True),
        _op("list_memory_entries", "/v1/memory/entries/list", idempotent=True),
        _op("get_memory_entry", "/v1/memory/entries/get", idempotent=True),
        _op("revise_memory_entry", "/v1/memory/entries/revise", idempotent=False),
        _op("retire_memory_entry", "/v1/memory/entries/retire", idempotent=False),
        _op("reactivate_memory_entry", "/v1/memory/entries/reactivate", idempotent=False),
        _op("memory_changes", "/v1/memory/changes", idempotent=True),
        _op("propose_experience", "/v1/experience/propose", idempotent=False, ok=(201,)),
        _op("get_experience", "/v1/experience/get", idempotent=True),
        _op("list_artifact_candidates", "/v1/artifact-candidates/list", idempotent=True),
        _op("get_artifact_candidate", "/v1/artifact-candidates/get", idempotent=True),
        _op("approve_artifact_candidate", "/v1/artifact-candidates/approve", idempotent=False),
        _op("reject_artifact_candidate", "/v1/artifact-candidates/reject", idempotent=False),
        _op("revise_artifact_candidate", "/v1/artifact-candidates/revise", idempotent=False),
    ]
}


@dataclass(frozen=True)
class Settings:
    base_url: str
    token: str | None
    timeout: httpx.Timeout
    max_retries: int

    @classmethod
    def resolve(
        cls,
        base_url: str | None,
        token: str | None,
        timeout: float | httpx.Timeout | None,
        max_retries: int,
    ) -> "Settings":
        """Arguments first, then ``POWERCONTEXT_URL`` / ``POWERCONTEXT_API_TOKEN``, then the
        local default server without a token."""
        url = base_url or os.environ.get(URL_ENV) or DEFAULT_URL
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {url!r}")
        if token is None:
            token = os.environ.get(TOKEN_ENV) or None
        if timeout is None:
            timeout = DEFAULT_TIMEOUT_SECONDS
        if not isinstance(timeout, httpx.Timeout):
            timeout = httpx.Timeout(timeout)
        if max_retries < 0:
            raise ValueError("max_retries must not be negative")
        return cls(url.rstrip("/"), token or None, timeout, max_retries)

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers


def body(**fields: Any) -> dict[str, Any]:
    """A request body: optional fields left as None are not sent, so the server applies
    its own defaults."""
    return {name: value for name, value in fields.items() if value is not None}


def encode(payload: dict[str, Any] | None) -> bytes | None:
    if payload is None:
        return None
    # allow_nan=False: NaN is not JSON, and the server would refuse it anyway.
    return json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")


def may_retry(op: Operation, attempt: int, settings: Settings) -> bool:
    return op.idempotent and attempt < settings.max_retries


def backoff(attempt: int) -> float:
    return min(_BACKOFF_SECONDS * (2**attempt), _BACKOFF_CAP_SECONDS)


# Failures after which an idempotent call is tried again: nothing usable came back.
# A read timeout is not among them: the server is slow, and asking again makes it slower.
RETRYABLE_TRANSPORT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError)


def retryable_response(response: httpx.Response, op: Operation) -> bool:
    """A 503 is asked again, unless it is one of the operation's answers (readiness)."""
    return response.status_code == 503 and 503 not in op.ok


def transport_error(exc: httpx.HTTPError, op: Operation) -> errors.PowerContextError:
    if isinstance(exc, httpx.TimeoutException):
        return errors.Timeout(
            f"No answer from the server within the timeout ({op.name}).", code="timeout"
        )
    return errors.Unavailable(
        f"Cannot reach the server at {_tried(exc)} ({op.name}): {type(exc).__name__}.",
        code="unavailable",
    )


def _tried(exc: httpx.HTTPError) -> str:
    """The URL the failed request went to (a wrong POWERCONTEXT_URL or port shows here)."""
    try:
        url = exc.request.url
    except RuntimeError:  # an error raised outside a request carries none
        return "(unknown URL)"
    return str(url.copy_with(query=None))


def result(response: httpx.Response, op: Operation) -> Any:
    """The decoded body of a successful answer, or the typed error it stands for."""
    request_id = response.headers.get(REQUEST_ID_HEADER)
    status = response.status_code
    try:
        decoded = response.json()
    except ValueError:
        decoded = None
    if status in op.ok and isinstance(decoded, dict):
        return decoded
    error = decoded.get("error") if isinstance(decoded, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code = error["code"]
        details = error.get("details")
        raise errors.error_class(status, code)(
            str(error.get("message") or code),
            code=code,
            status=status,
            details=details if isinstance(details, dict) else None,
            request_id=request_id,
        )
    if status in op.ok or 200 <= status < 400:
        raise errors.UnexpectedResponse(
            f"The answer to {op.name} is not the API's (HTTP {status}).",
            code="unexpected_response",
            status=status,
            request_id=request_id,
        )
    # An error without the API's shape (a proxy, a load balancer): classify by status.
    raise errors.error_class(status, "")(
        f"HTTP {status} from the server ({op.name}).",
        code=f"http_{status}",
        status=status,
        request_id=request_id,
    )
