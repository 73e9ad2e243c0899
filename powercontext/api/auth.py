"""Who may call which operation: bearer authentication and the one table of roles
(DESIGN.md §4, "Auth"), for ``/v1/`` and ``/mcp`` alike.

With ``POWERCONTEXT_API_TOKEN`` set, every ``/v1/`` call needs a token (compared in
constant time). Without it the server only binds loopback (``manage.py serve`` refuses
anything else), and every local caller without a personal token is the agent.

Two kinds of token, two kinds of caller:

- the agent token (or no token, when none is configured) is the **agent**: it reads,
  writes Memory, proposes Experience and captures sources, and never decides;
- a personal token (``manage.py reviewer_token``) is a **person**: it reads, and decides
  candidates when its user has the review permission. A person never writes Memory,
  proposes or captures: that is the agent's work, and what an agent writes is what the
  hook puts in front of it, so a leaked or shared personal token must not be a way in.

Each view says which role its operation needs (``ApiView.role``, beside its
``operation``: its OpenAPI operation id), and an MCP tool runs its view's operation, so it
takes the same role (``powercontext.api.mcp``). A view without a role is refused.
"""

import hmac
from dataclasses import dataclass
from enum import Enum

from django.conf import settings
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.permissions import BasePermission

from powercontext.exceptions import PermissionDenied


@dataclass(frozen=True)
class Caller:
    """Who is calling: the agent, or a person (a Django user) by their personal token."""

    kind: str  # "agent" or "person"
    user: object | None = None
    may_decide: bool = False  # a person whose user has the review permission

    is_authenticated = True


AGENT = Caller("agent")


class Role(Enum):
    READ = "read"  # any caller
    WRITE = "write"  # the agent only: writes Memory, proposes, captures
    DECIDE = "decide"  # a person with the review permission only


def permit(caller: Caller, role: Role | None, operation: str) -> None:
    """PermissionDenied unless ``caller`` holds ``role``, the role ``operation`` needs. An
    operation without a role is refused: a new one is closed until it is given one."""
    if role is Role.READ:
        return
    if role is Role.WRITE:
        if caller.kind == "agent":
            return
        raise PermissionDenied(
            "A personal token may read (and decide candidates) but not write Memory, "
            "propose or capture: that needs the agent token."
        )
    if role is Role.DECIDE:
        if caller.kind == "person" and caller.may_decide:
            return
        if caller.kind == "person":
            raise PermissionDenied("This user may not decide candidates.")
        raise PermissionDenied("Deciding a candidate needs a reviewer's personal token.")
    raise PermissionDenied(f"No role is defined for {operation!r}.")


def bearer_token(header: bytes) -> str | None:
    """The token of an ``Authorization: Bearer`` header value; None for another scheme,
    and for ``Bearer`` with nothing after it: an empty token is no credential, the same as
    no header (an agent's MCP entry sends ``Bearer ${POWERCONTEXT_API_TOKEN:-}``, which is
    empty when the server needs no token)."""
    parts = header.split()
    if not parts or parts[0].lower() != b"bearer" or len(parts) == 1:
        return None
    if len(parts) != 2:
        raise AuthenticationFailed("Malformed bearer token.")
    try:
        return parts[1].decode("ascii")
    except UnicodeDecodeError as error:
        raise AuthenticationFailed("Malformed bearer token.") from error


def caller_for(header: bytes) -> Caller | None:
    """The caller an ``Authorization`` header value names: the agent token, a personal
    token, or (with no agent token configured) the local agent. None when a token is
    configured and none was sent; AuthenticationFailed for a wrong one."""
    token = bearer_token(header)
    expected = settings.POWERCONTEXT_API_TOKEN
    if token is None:
        return AGENT if expected is None else None
    if expected is not None and hmac.compare_digest(token.encode(), expected.encode()):
        return AGENT
    person = person_for_token(token)
    if person is not None:
        user, may_decide = person
        return Caller("person", user, may_decide)
    if expected is None:
        # No agent token configured: an unknown bearer is still a local agent.
        return AGENT
    raise AuthenticationFailed("Invalid bearer token.")


class BearerAuthentication(BaseAuthentication):
    """Resolves the caller from ``Authorization: Bearer`` (``caller_for``)."""

    def authenticate(self, request):
        caller = caller_for(get_authorization_header(request))
        return None if caller is None else (caller, None)

    def authenticate_header(self, request):
        return 'Bearer realm="powercontext"'


def person_for_token(token: str) -> tuple[object, bool] | None:
    """(user, may decide) for a personal token, or None (when the experience app, which
    keeps the tokens, says so through ``POWERCONTEXT_REVIEWER_TOKEN_FINDER``)."""
    finder = getattr(settings, "POWERCONTEXT_REVIEWER_TOKEN_FINDER", None)
    if finder is None:
        return None
    from django.utils.module_loading import import_string

    return import_string(finder)(token)


class IsCaller(BasePermission):
    """Any authenticated caller that holds the view's ``role``."""

    def has_permission(self, request, view):
        if not isinstance(request.user, Caller):
            raise NotAuthenticated()
        permit(request.user, getattr(view, "role", None), getattr(view, "operation", ""))
        return True
