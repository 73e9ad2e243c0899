"""Admin logins that cannot starve the agents.

Checking a password costs a full PBKDF2 hash (0.5 to 1 s of a core on a loaded 2-core
machine; an unknown username is hashed too, so timing does not tell who exists). On the 4
worker threads of ``manage.py serve`` a handful of clients posting wrong passwords would keep
every thread hashing, and the hook's ``prepare`` (1.5 s budget) would wait behind them.
Two defences:

- **Throttling** (django-axes, configured in settings): from the ``AXES_FAILURE_LIMIT``-th
  failure from one client address, or for one username, on, attempts are refused with
  429 ``throttled`` *before* any hash, until the cool-off (``AXES_COOLOFF_TIME``) ends.
- **A bounded gate** around the hash itself (``BoundedModelBackend``): at most
  ``HASHING_CONCURRENCY`` passwords are checked at once; a login arriving while the gate is
  full is refused at once with 429 (``Retry-After: 1``) instead of waiting on a worker
  thread. Even many addresses and usernames, each under the limit, keep the other threads
  and a core free for the agents' routes.
"""

import logging
import threading
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from powercontext.api.errors import json_error
from server.middleware import GetResponse

HASHING_CONCURRENCY = 1
_hashing = threading.BoundedSemaphore(HASHING_CONCURRENCY)
# Set on a request whose login was refused because the gate was full.
_BUSY_ATTRIBUTE = "powercontext_login_busy"

logger = logging.getLogger("powercontext.login")


class BoundedModelBackend(ModelBackend):
    """Django's password check, at most ``HASHING_CONCURRENCY`` at a time, never queued."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        if not _hashing.acquire(blocking=False):
            if request is not None:
                setattr(request, _BUSY_ATTRIBUTE, True)
            # Stops authenticate() here; the failure still counts towards the lockout.
            raise PermissionDenied
        try:
            return super().authenticate(request, username=username, password=password, **kwargs)
        finally:
            _hashing.release()


class LoginBusyMiddleware:
    """429 for a login the gate refused: the login form would otherwise answer "wrong
    password", which it was not."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if getattr(request, _BUSY_ATTRIBUTE, False):
            logger.warning("login refused: another password check is in progress (429)")
            response = json_error(
                429, "throttled", "Another login is being checked; try again in a moment."
            )
            response["Retry-After"] = "1"
        return response


def lockout_response(
    request: HttpRequest, original_response: HttpResponseBase | None, credentials: Any
) -> HttpResponseBase:
    """``AXES_LOCKOUT_CALLABLE``: the API's error shape, without the username or address
    in the answer or the log."""
    logger.warning("login locked out after repeated failures (429)")
    response = json_error(
        429,
        "throttled",
        "Too many failed logins from this client or for this user; try again later.",
    )
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response
