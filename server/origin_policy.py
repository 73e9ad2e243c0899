"""Which Host and Origin a request may carry: the one rule for every route.

A web page in the developer's browser can reach a server on 127.0.0.1. Through DNS
rebinding (``attacker.example`` first resolving to the attacker, then to 127.0.0.1) its
requests even count as same-origin for the browser, so it could read every memory and
plant text that the hook injects into an agent's prompt. Two headers betray such a
request, and the browser sets both itself:

- ``Host`` names the attacker's domain: only names of this machine (127.0.0.0/8, ``::1``,
  ``localhost``), the address ``manage.py serve`` bound and the operator's
  ``POWERCONTEXT_ALLOWED_HOSTS`` are served. Any port: a rebinding page uses the server's
  own port, and an ssh tunnel (``localhost:9000`` -> ``127.0.0.1:8000``) must keep working.
- ``Origin`` (sent on every cross-origin request, every POST, and on the plain form post
  or ``fetch`` a foreign page sends straight to ``127.0.0.1``) must name an allowed host
  too. ``null`` (a sandboxed frame, a ``file:`` page) is foreign.

A request without ``Host`` (HTTP/1.0) is served: browsers always send one. Django's own
``ALLOWED_HOSTS`` cannot express 127.0.0.0/8 nor answer in the API's error shape, so this
rule is applied by ``HostOriginMiddleware`` for Django and by ``/mcp``'s WSGI guard.
"""

from collections.abc import Iterable
from urllib.parse import urlsplit

from django.http.request import split_domain_port, validate_host

from server.addresses import is_loopback

# Set by ``manage.py serve`` when it binds a specific non-loopback address (only allowed
# with a token): agents that address the server by that IP need no extra setting.
_bound_hosts: set[str] = set()


def allow_bound_host(host: str) -> None:
    """Serve requests addressed to ``host``, the address this process listens on."""
    domain, _ = split_domain_port(_bracketed(host))
    if domain and domain not in {"0.0.0.0", "[::]"}:  # noqa: S104  (wildcards: no one's name)
        _bound_hosts.add(domain)


def parse_allowed_hosts(value: str) -> list[str]:
    """``POWERCONTEXT_ALLOWED_HOSTS``: comma-separated names, Django's ``ALLOWED_HOSTS``
    syntax (``.example.com`` also matches subdomains, ``*`` matches any)."""
    return [name.strip().lower() for name in value.split(",") if name.strip()]


def refusal(host: str | None, origin: str | None, allowed: Iterable[str]) -> str | None:
    """None when a request with these ``Host`` and ``Origin`` headers may be served, else
    why not (the message of the 403)."""
    allowed = list(allowed)
    if host and not _host_allowed(host, allowed):
        return (
            "This server answers requests addressed to this machine only (Host must be "
            "loopback or listed in POWERCONTEXT_ALLOWED_HOSTS)."
        )
    if origin is not None and not _origin_allowed(origin, allowed):
        return (
            "Requests from a web page of another site are refused (Origin must be loopback "
            "or listed in POWERCONTEXT_ALLOWED_HOSTS)."
        )
    return None


def _host_allowed(value: str, allowed: list[str]) -> bool:
    domain, _ = split_domain_port(value)
    if not domain:
        return False  # malformed: Django would refuse it as well
    return is_loopback(domain) or domain in _bound_hosts or validate_host(domain, allowed)


def _origin_allowed(origin: str, allowed: list[str]) -> bool:
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    return _host_allowed(parts.netloc, allowed)


def _bracketed(host: str) -> str:
    host = host.removeprefix("[").removesuffix("]")
    return f"[{host}]" if ":" in host else host
