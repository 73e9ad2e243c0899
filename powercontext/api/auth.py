"""Bearer-token authentication for the agents' API (DESIGN.md §4, "Auth").

With ``POWERCONTEXT_API_TOKEN`` set, every ``/v1/`` call needs it (compared in constant
time). Without it the server only binds loopback (``manage.py serve`` refuses anything
else), and every local caller is an agent.
"""

import hmac
from dataclasses import dataclass

from django.conf import settings
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.permissions import BasePermission


@dataclass(frozen=True)
class Caller:
    """Who is calling. Agents read and propose; reviewers (a Django user) decide."""

    kind: str  # "agent" or "reviewer"
    user: object | None = None

    is_authenticated = True


AGENT = Caller("agent")


def bearer_token(request) -> str | None:
    header = get_authorization_header(request).split()
    if not header or header[0].lower() != b"bearer":
        return None
    if len(header) != 2:
        raise AuthenticationFailed("Malformed bearer token.")
    try:
        return header[1].decode("ascii")
    except UnicodeDecodeError as error:
        raise AuthenticationFailed("Malformed bearer token.") from error


class BearerAuthentication(BaseAuthentication):
    """Resolves the caller from ``Authorization: Bearer``: the agent token, or a
    reviewer's personal token (``reviewer_token_user``, when the experience app has one)."""

    def authenticate(self, request):
        token = bearer_token(request)
        expected = settings.POWERCONTEXT_API_TOKEN
        if token is None:
            return (AGENT, None) if expected is None else None
        if expected is not None and hmac.compare_digest(token.encode(), expected.encode()):
            return AGENT, token
        reviewer = reviewer_for_token(token)
        if reviewer is not None:
            return Caller("reviewer", reviewer), token
        if expected is None:
            # No agent token configured: an unknown bearer is still a local agent.
            return AGENT, None
        raise AuthenticationFailed("Invalid bearer token.")

    def authenticate_header(self, request):
        return 'Bearer realm="powercontext"'


def reviewer_for_token(token: str):
    """The Django user whose personal reviewer token this is, or None."""
    finder = getattr(settings, "POWERCONTEXT_REVIEWER_TOKEN_FINDER", None)
    if finder is None:
        return None
    from django.utils.module_loading import import_string

    return import_string(finder)(token)


class IsCaller(BasePermission):
    """Any authenticated caller (agent or reviewer)."""

    def has_permission(self, request, view):
        if not isinstance(request.user, Caller):
            raise NotAuthenticated()
        return True
