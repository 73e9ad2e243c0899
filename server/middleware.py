"""Request plumbing: request ids, a privacy-safe access log, the Host and Origin rule,
the body size limit and the Content-Security-Policy."""

import logging
import re
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import Resolver404, resolve

from powercontext import metrics
from powercontext.api.errors import error_code_of, json_error
from server import origin_policy

REQUEST_ID_HEADER = "X-PowerContext-Request-ID"
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

access_log = logging.getLogger("powercontext.access")

# What a middleware wraps: the rest of the chain.
GetResponse = Callable[[HttpRequest], HttpResponseBase]


def request_id_for(incoming: str) -> str:
    """The caller's own request id when well-formed (so logs line up across processes),
    else a new one."""
    return incoming if _SAFE_REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex


class RequestIdMiddleware:
    """Every response carries ``X-PowerContext-Request-ID``: the caller's own id when it
    sent a well-formed one (so logs line up across processes), else a new one."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = request_id_for(request.headers.get(REQUEST_ID_HEADER, ""))
        request.request_id = request_id  # type: ignore[attr-defined]
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        return response


class AccessLogMiddleware:
    """One line per request: method, route pattern, status, latency. Never the path's
    values, the query string or a body (they can hold scopes, prompts and memories).
    The same four facts, and the error code of an error response, go to the metrics."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        route = _route(request)
        method = metrics.method_label(request.method or "")
        access_log.info("%s %s %s %.1fms", method, route, response.status_code, elapsed * 1000)
        metrics.observe_request(
            operation=route,
            method=method,
            status=response.status_code,
            seconds=elapsed,
            error_code=error_code_of(response),
        )
        return response


def _route(request: HttpRequest) -> str:
    """The route pattern the request matched, e.g. ``/v1/memory/remember``.

    A response given before URL resolution (a 413 from ``BodySizeLimitMiddleware``) is
    still attributed to its route."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return metrics.UNMATCHED
    return "/" + match.route if match.route else metrics.UNMATCHED


class BodySizeLimitMiddleware:
    """413 ``payload_too_large`` before a body over the limit is read at all."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.POWERCONTEXT_MAX_BODY_BYTES:
            return json_error(413, "payload_too_large", "The request body is too large.")
        return self.get_response(request)


class HostOriginMiddleware:
    """403 ``permission_denied`` for a request whose Host or Origin is not this machine's
    (``server.origin_policy``): DNS rebinding and foreign pages, on every route,
    the admin and the static files included."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        refused = origin_policy.refusal(
            request.META.get("HTTP_HOST"),
            request.META.get("HTTP_ORIGIN"),
            settings.POWERCONTEXT_ALLOWED_HOSTS,
        )
        if refused is not None:
            return json_error(403, "permission_denied", refused)
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    """``Content-Security-Policy: settings.CONTENT_SECURITY_POLICY`` on every response
    that does not set its own (Django 5.2 has no CSP of its own)."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response
