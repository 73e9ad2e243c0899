"""Call PowerContext's MCP endpoint the way an agent's configuration says: the doctor's
check that the tools answer, authenticated, before the agent needs them.

Two JSON-RPC calls over Streamable HTTP (stateless, JSON answers): ``tools/list``, then a
read-only ``tools/call`` of ``list_memory_entries`` (a read through the tools' own
permission check, which a ``tools/list`` alone does not exercise). Nothing is written.

Standard library only, Python 3.9+.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

REQUIRED_TOOLS = ("remember_memory", "search_memory")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str, environ: Mapping[str, str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` as Claude Code expands them in a plugin's MCP
    entry (an unset or empty variable takes the default)."""
    return _VARIABLE.sub(lambda m: environ.get(m.group(1)) or (m.group(2) or ""), value)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None  # the agents do not follow one either; it is reported


def post(url: str, headers: Mapping[str, str], message: dict, timeout: float = 10.0):
    """(HTTP status, decoded JSON body or None, error text or None)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
            **headers,
        },
        method="POST",
    )
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as response:
            status, body = response.status, response.read(1024 * 1024)
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read(1024 * 1024)
    except (OSError, ValueError) as error:
        return None, None, str(getattr(error, "reason", error))
    try:
        return status, json.loads(body.decode("utf-8")), None
    except ValueError:
        return status, None, None


def probe(url: str, headers: Mapping[str, str], scope_id: str) -> str | None:
    """None when the endpoint lists the tools and answers a read; else why not, in words."""
    if not url.startswith(("http://", "https://")):
        return f"the MCP URL {json.dumps(url)} is not an http(s) URL"
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    status, body, error = post(url, headers, listing)
    if status is None:
        return f"nothing answers at {url} ({error})"
    if status in (401, 403):
        return f"{url} refused the credentials (HTTP {status})"
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("result"), dict):
        return f"{url} answered HTTP {status} without a tool list: is it PowerContext's /mcp?"
    tools = body["result"].get("tools")
    names = (
        {t.get("name") for t in tools if isinstance(t, dict)} if isinstance(tools, list) else set()
    )
    missing = [name for name in REQUIRED_TOOLS if name not in names]
    if missing:
        return f"{url} lists no {', '.join(missing)}: is it PowerContext's /mcp?"
    read = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "list_memory_entries", "arguments": {"scope_id": scope_id, "limit": 1}},
    }
    status, body, error = post(url, headers, read)
    result = body.get("result") if isinstance(body, dict) else None
    if status != 200 or not isinstance(result, dict):
        return f"a read through {url} failed (HTTP {status}{', ' + error if error else ''})"
    if result.get("isError"):
        detail = (result.get("structuredContent") or {}).get("error") or {}
        message = detail.get("message") if isinstance(detail, dict) else None
        return f"a read through {url} answered an error: {json.dumps(message or result)}"
    return None


def bearer_headers(environ: Mapping[str, str], variable: str | None) -> dict[str, str]:
    """The Authorization header Codex sends for ``bearer_token_env_var``."""
    token = environ.get(variable or "", "").strip()
    return {"Authorization": "Bearer " + token} if token else {}
