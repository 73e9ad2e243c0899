"""PowerContext ``UserPromptSubmit`` hook core for Codex and Claude Code.

Standard library only, Python 3.9+ (checked with vermin in the tests). The entry scripts
``codex_user_prompt_submit.py`` and ``claude_user_prompt_submit.py`` call :func:`main`;
keeping the bulk of the code in this importable module lets Python cache its bytecode,
which an executed script never gets.

Per prompt the hook makes at most two calls, concurrently, under one hard time budget:

- **recall**: ``POST /v1/context/prepare`` once, validated strictly; on ``ready`` the
  content goes to the agent unchanged as ``hookSpecificOutput.additionalContext``;
- **capture**: ``POST /v1/sources/content`` with an idempotent source id.

(Copilot CLI's first prompt of a session adds a third, the session's pack, under the
same budget: see ``claim_session_pack``. Its preCompact hook makes none: see
``run_compact``.)

It fails open: whatever goes wrong, stdout stays empty, the exit code is 0, and recall
writes one JSON diagnostic line to stderr (never the prompt, scope, citations or content).

HTTP is spoken over a plain socket instead of ``http.client``/``urllib``: importing
``http.client`` (email parser, ssl) costs 10-20 ms on every prompt, more than the rest of
the hook. The client needs very little: one request per connection (``Connection:
close``), no redirects ever followed, a body read capped at 1 MiB + 1 byte, and every
socket operation bounded by the remaining budget.
"""

from __future__ import annotations

import time

# The budget counts from as close to process start as a module can see.
STARTED = time.monotonic()

import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

# Annotations are never evaluated (see the __future__ import), so ``typing`` (2 ms to
# import) is needed only by type checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SCHEMA = "powercontext.prepared-context.v1"
PROMPT_EVENT = "UserPromptSubmit"
SESSION_EVENT = "SessionStart"
# Copilot CLI's preCompact: no pack is asked for, so no diagnostic line (see run_compact).
COMPACT_EVENT = "PreCompact"
# The diagnostic line's ``event`` for each hook event.
DIAGNOSTIC_EVENTS = {PROMPT_EVENT: "context_prepare", SESSION_EVENT: "context_session"}
# A session's pack is small: what a new session most needs, before any prompt.
SESSION_MAX_BYTES = 2000
PREPARED_KEYS = frozenset(("schema", "status", "content", "content_bytes"))
MAX_BYTES = 8000
QUERY_MAX_CHARS = 8192
CAPTURE_MAX_CHARS = 200000
METADATA_VALUE_MAX_CHARS = 256
BODY_LIMIT = 1024 * 1024
HEADER_LIMIT = 64 * 1024
DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_BUDGET_MS = 1500
MIN_BUDGET_MS = 100
MAX_BUDGET_MS = 4000
SOURCE_ID_TAG = "powercontext.prompt-source.v1"
USER_AGENT = "powercontext-hook/1"

AGENTS = {
    "codex": "powercontext.codex.recall",
    "claude": "powercontext.claude.recall",
    "gemini": "powercontext.gemini.recall",
    "copilot": "powercontext.copilot.recall",
    "opencode": "powercontext.opencode.recall",
}
# What each host calls the two events in its hook input (``hook_event_name``), keyed by
# the event the entry script handles. Gemini CLI's prompt event is ``BeforeAgent``;
# Copilot CLI sends no event name at all (its input is ``{sessionId, timestamp, cwd,
# prompt}``, ``{sessionId, timestamp, cwd, source, initialPrompt?}`` or, before a
# compaction, ``{sessionId, timestamp, cwd, transcriptPath, trigger, customInstructions}``),
# so the entry script alone says which event it is.
HOST_EVENTS = {
    "gemini": {PROMPT_EVENT: "BeforeAgent", SESSION_EVENT: "SessionStart"},
    "copilot": {PROMPT_EVENT: None, SESSION_EVENT: None, COMPACT_EVENT: None},
}

SKIPPED = "skipped"
EMPTY = "empty"
AUTHENTICATION_FAILED = "authentication_failed"
VERSION_MISMATCH = "version_mismatch"
SERVER_UNAVAILABLE = "server_unavailable"
INVALID_RESPONSE = "invalid_response"
READY = "ready"  # success: never written as a diagnostic

_FALSE_WORDS = frozenset(("0", "false", "no", "off", "disable", "disabled"))
_TRUE_WORDS = frozenset(("1", "true", "yes", "on", "enable", "enabled"))


# --------------------------------------------------------------------------- config


class Config:
    """What the environment says, with ``error`` set when the hook must not call out."""

    def __init__(self) -> None:
        self.url = DEFAULT_URL
        self.scheme = "http"
        self.host = "127.0.0.1"
        self.port = 8000
        self.base_path = ""
        self.token: str | None = None
        self.recall = True
        self.capture = True
        self.budget = DEFAULT_BUDGET_MS / 1000.0
        self.allow_insecure_http = False
        self.error: str | None = None

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


def env_flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    value = environ.get(name, "").strip().lower()
    if value in _FALSE_WORDS:
        return False
    if value in _TRUE_WORDS:
        return True
    return default


def is_loopback(host: str) -> bool:
    """Literal loopback names only: resolving a name would cost time and prove little."""
    host = host.lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    parts = host.split(".")
    if len(parts) == 4 and all(p.isdigit() and len(p) <= 3 for p in parts):
        return int(parts[0]) == 127
    if ":" in host:
        try:
            return socket.inet_pton(socket.AF_INET6, host) == socket.inet_pton(
                socket.AF_INET6, "::1"
            )
        except (OSError, ValueError):
            return False
    return False


def parse_url(config: Config, url: str) -> None:
    """Fill scheme/host/port/base_path from ``url`` or set ``config.error``."""
    config.url = url
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        config.error = "POWERCONTEXT_URL must start with http:// or https://"
        return
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        config.error = (
            "POWERCONTEXT_URL must not carry credentials; put the token in POWERCONTEXT_API_TOKEN"
        )
        return
    if authority.startswith("["):
        end = authority.find("]")
        if end == -1:
            config.error = "POWERCONTEXT_URL has an unterminated IPv6 address"
            return
        host, port_text = authority[1:end], authority[end + 1 :]
        if port_text and not port_text.startswith(":"):
            config.error = "POWERCONTEXT_URL has a malformed host"
            return
        port_text = port_text[1:]
    else:
        host, _, port_text = authority.partition(":")
    if not host:
        config.error = "POWERCONTEXT_URL has no host"
        return
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            config.error = "POWERCONTEXT_URL has an invalid port"
            return
        port = int(port_text)
    else:
        port = 443 if scheme == "https" else 80
    path = path.split("?", 1)[0].split("#", 1)[0]
    config.scheme, config.host, config.port = scheme, host, port
    config.base_path = ("/" + path).rstrip("/") if slash else ""


def load_config(environ: Mapping[str, str]) -> Config:
    config = Config()
    parse_url(config, environ.get("POWERCONTEXT_URL", "").strip() or DEFAULT_URL)
    token = environ.get("POWERCONTEXT_API_TOKEN", "").strip()
    config.token = token or None
    config.recall = env_flag(environ, "POWERCONTEXT_RECALL", True)
    config.capture = env_flag(environ, "POWERCONTEXT_CAPTURE", True)
    config.allow_insecure_http = env_flag(environ, "POWERCONTEXT_ALLOW_INSECURE_HTTP", False)
    budget = environ.get("POWERCONTEXT_HOOK_TIMEOUT_MS", "").strip()
    if budget.isdigit():
        config.budget = min(max(int(budget), MIN_BUDGET_MS), MAX_BUDGET_MS) / 1000.0
    if (
        config.error is None
        and config.scheme == "http"
        and not is_loopback(config.host)
        and not config.allow_insecure_http
    ):
        config.error = (
            "POWERCONTEXT_URL uses plain http:// to a host that is not loopback; use https://"
            " or set POWERCONTEXT_ALLOW_INSECURE_HTTP=1 to accept the risk"
        )
    return config


# ---------------------------------------------------------------------------- scope


def normalize_remote(url: str) -> str | None:
    """``host/path`` of a git remote URL, or None when it names no network host.

    https://user:pw@GitHub.com:443/o/r.git/, git@github.com:o/r.git and
    ssh://git@github.com/o/r all become ``github.com/o/r``: credentials, the port, a
    ``.git`` suffix and stray slashes go, the host is lower-cased, the path keeps its case.
    """
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        scheme, _, rest = url.partition("://")
        if scheme.lower() == "file":
            return None
        authority, _, path = rest.partition("/")
        authority = authority.rpartition("@")[2]
        if authority.startswith("["):
            end = authority.find("]")
            host = authority[: end + 1] if end != -1 else ""
        else:
            host = authority.partition(":")[0]
    else:
        # scp-like syntax, [user@]host:path; a colon after the first slash means a path.
        at = url.find("@")
        start = at + 1 if at != -1 else 0
        if url.startswith("[", start):
            end = url.find("]:", start)
            if end == -1:
                return None
            host, path = url[start : end + 1], url[end + 2 :]
        else:
            colon, slash = url.find(":"), url.find("/")
            if colon <= 0 or (slash != -1 and slash < colon):
                return None
            if colon == 1 and url[0].isalpha():  # C:\repo or C:/repo, not a host
                return None
            host, path = url[:colon].rpartition("@")[2], url[colon + 1 :]
    host = host.lower()
    if not host or host == "[]":
        return None
    path = path.split("?", 1)[0].split("#", 1)[0]
    segments = [s for s in path.replace("\\", "/").split("/") if s and s != "."]
    if segments and segments[-1].endswith(".git"):
        segments[-1] = segments[-1][:-4]
        if not segments[-1]:
            segments.pop()
    if not segments:
        return None
    return host + "/" + "/".join(segments)


def find_git_dir(start: str) -> tuple[str | None, str | None]:
    """(work tree root, directory holding ``config``) for ``start``, or (None, None).

    Reads ``.git`` directly rather than spawning ``git``: a spawn costs milliseconds on
    every prompt. Handles ``.git`` files (worktrees, submodules) and ``commondir``.
    """
    current = start
    while True:
        candidate = os.path.join(current, ".git")
        git_dir = None
        if os.path.isdir(candidate):
            git_dir = candidate
        elif os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8") as handle:
                    line = handle.readline().strip()
            except (OSError, UnicodeDecodeError):
                line = ""
            if line.startswith("gitdir:"):
                git_dir = os.path.normpath(os.path.join(current, line[len("gitdir:") :].strip()))
        if git_dir is not None:
            common = git_dir
            try:
                with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
                    common = os.path.normpath(os.path.join(git_dir, handle.readline().strip()))
            except (OSError, UnicodeDecodeError):
                pass
            return current, common
        parent = os.path.dirname(current)
        if parent == current:
            return None, None
        current = parent


def _config_value(raw: str) -> str:
    """A git config value: quotes, backslash escapes, comments, trailing whitespace."""
    out: list[str] = []
    quoted = False
    pending_space = ""
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            out.append(pending_space + {"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            pending_space = ""
            i += 2
            continue
        if ch == '"':
            out.append(pending_space)
            pending_space = ""
            quoted = not quoted
        elif not quoted and ch in "#;":
            break
        elif not quoted and ch in " \t":
            pending_space += ch
        else:
            out.append(pending_space + ch)
            pending_space = ""
        i += 1
    return "".join(out)


def read_origin_url(config_path: str) -> str | None:
    """The first ``url`` of ``[remote "origin"]`` in a git config file (no includes)."""
    try:
        with open(config_path, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    in_origin = False
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            header, _, rest = stripped[1:].partition("]")
            header = header.strip()
            in_origin = header == 'remote "origin"' or header.lower() == "remote.origin"
            stripped = rest.strip()
            if not stripped or stripped[0] in "#;":
                continue
        if not in_origin:
            continue
        key, eq, value = stripped.partition("=")
        if eq and key.strip().lower() == "url":
            value = _config_value(value.strip())
            if value:
                return value
    return None


def local_scope(path: str) -> str:
    return "local:" + hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()


def resolve_scope(cwd: str | None, environ: Mapping[str, str]) -> str:
    """POWERCONTEXT_SCOPE_ID, else git:<host/path> of origin, else local:<sha256 of root>."""
    explicit = environ.get("POWERCONTEXT_SCOPE_ID", "").strip()
    if explicit:
        return explicit
    if not cwd or not os.path.isdir(cwd):
        cwd = os.getcwd()
    start = os.path.realpath(cwd)
    root, config_dir = find_git_dir(start)
    if config_dir is not None:
        url = read_origin_url(os.path.join(config_dir, "config"))
        remote = normalize_remote(url) if url else None
        if remote:
            return "git:" + remote
    return local_scope(root or start)


# ----------------------------------------------------------------------------- HTTP


class Unavailable(Exception):
    """No usable answer in time: connection refused or reset, timeout, DNS failure."""

    def __init__(self, status: int | None = None) -> None:
        super().__init__(status)
        self.status = status


class Invalid(Exception):
    """An answer that breaks the HTTP or response contract."""

    def __init__(self, status: int | None = None) -> None:
        super().__init__(status)
        self.status = status


class _Reader:
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buffer = b""
        self.eof = False
        self.status: int | None = None

    def _fill(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise Unavailable(self.status)
        try:
            self.sock.settimeout(remaining)
            chunk = self.sock.recv(65536)
        except OSError as exc:  # socket.timeout is an OSError
            raise Unavailable(self.status) from exc
        if not chunk:
            self.eof = True
        self.buffer += chunk

    def line(self, limit: int = 8192) -> bytes:
        while True:
            end = self.buffer.find(b"\n")
            if end != -1:
                line, self.buffer = self.buffer[:end], self.buffer[end + 1 :]
                return line.rstrip(b"\r")
            if len(self.buffer) > limit:
                raise Invalid(self.status)
            if self.eof:
                raise Invalid(self.status) if self.status else Unavailable(None)
            self._fill()

    def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if self.eof:
                raise Invalid(self.status)
            self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def until_eof(self, limit: int) -> bytes:
        while not self.eof and len(self.buffer) <= limit:
            self._fill()
        return self.buffer


def _read_head(reader: _Reader) -> tuple[int, dict[str, str]]:
    while True:
        parts = reader.line().split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise Invalid(None)
        status = int(parts[1])
        reader.status = status
        headers: dict[str, str] = {}
        size = 0
        while True:
            line = reader.line()
            size += len(line)
            if size > HEADER_LIMIT:
                raise Invalid(status)
            if not line:
                break
            name, colon, value = line.partition(b":")
            if not colon:
                raise Invalid(status)
            key = name.strip().decode("latin-1").lower()
            text = value.strip().decode("latin-1")
            headers[key] = headers[key] + ", " + text if key in headers else text
        if 100 <= status < 200 and status != 101:
            continue  # an interim answer: the real one follows
        return status, headers


def _read_body(reader: _Reader, headers: dict[str, str], limit: int) -> bytes:
    status = reader.status
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while True:
            size_text = reader.line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise Invalid(status) from None
            if size < 0 or len(body) + size > limit:
                raise Invalid(status)
            if size == 0:
                return body
            body += reader.exactly(size)
            if reader.line() != b"":
                raise Invalid(status)
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit() or int(length) > limit:
            raise Invalid(status)
        return reader.exactly(int(length))
    body = reader.until_eof(limit)
    if len(body) > limit:
        raise Invalid(status)
    return body


def http_request(
    config: Config,
    method: str,
    path: str,
    payload: dict[str, Any] | None,
    deadline: float,
    read_body_for: tuple[int, ...] = (200,),
) -> tuple[int, dict[str, str], bytes]:
    """One request on a fresh connection; redirects are returned, never followed.

    The body is read only for statuses in ``read_body_for``, at most ``BODY_LIMIT`` bytes
    (``BODY_LIMIT + 1`` are read to tell "too large"). Raises :class:`Unavailable` or
    :class:`Invalid`.
    """
    # ensure_ascii: a lone surrogate from the host becomes an escape the server rejects,
    # rather than an encoding error here.
    body = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode("ascii")
    lines = [
        f"{method} {config.base_path + path} HTTP/1.1",
        "Host: " + config.host_header,
        "User-Agent: " + USER_AGENT,
        "Accept: application/json",
        "Connection: close",
    ]
    if payload is not None:
        lines.append("Content-Type: application/json")
        lines.append(f"Content-Length: {len(body)}")
    if config.token:
        lines.append("Authorization: Bearer " + config.token)
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise Unavailable(None)
    try:
        # An ASCII host as bytes spares getaddrinfo the idna codec import (2 ms).
        host = config.host.encode("ascii") if config.host.isascii() else config.host
        sock = socket.create_connection((host, config.port), timeout=remaining)
    except OSError as exc:
        raise Unavailable(None) from exc
    try:
        if config.scheme == "https":
            import ssl  # only https pays for it

            context = ssl.create_default_context()
            try:
                sock = context.wrap_socket(sock, server_hostname=config.host)
            except ssl.SSLError as exc:
                raise Invalid(None) from exc
            except OSError as exc:
                raise Unavailable(None) from exc
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(request)
        except OSError as exc:
            raise Unavailable(None) from exc
        reader = _Reader(sock, deadline)
        status, headers = _read_head(reader)
        data = _read_body(reader, headers, BODY_LIMIT) if status in read_body_for else b""
        return status, headers, data
    finally:
        try:
            sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------- recall


def _reject_constant(name: str) -> Any:
    raise ValueError("non-standard JSON constant " + name)


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError("duplicate key")
        result[key] = value
    return result


def parse_prepared(body: bytes, max_bytes: int = MAX_BYTES) -> tuple[str, str | None, int]:
    """(status, content, content_bytes) of a valid prepared-context body; else ValueError.

    Exact key set, the one schema, status ready|empty, an int (not bool) byte count equal
    to the UTF-8 length of the content and within the budget, content null exactly when
    empty. The content is returned exactly as sent.
    """
    data = json.loads(
        body.decode("utf-8"),
        object_pairs_hook=_unique_object,
        parse_constant=_reject_constant,
    )
    if type(data) is not dict or set(data) != PREPARED_KEYS:
        raise ValueError("unexpected keys")
    if data["schema"] != SCHEMA:
        raise ValueError("unknown schema")
    status, content, content_bytes = data["status"], data["content"], data["content_bytes"]
    if type(content_bytes) is not int:
        raise ValueError("content_bytes is not an integer")
    if status == "empty":
        if content is not None or content_bytes != 0:
            raise ValueError("empty with content")
        return status, None, 0
    if status != "ready":
        raise ValueError("unknown status")
    if type(content) is not str or not content:
        raise ValueError("ready without content")
    if not 0 < content_bytes <= max_bytes:
        raise ValueError("content_bytes out of budget")
    if len(content.encode("utf-8")) != content_bytes:  # a lone surrogate raises here too
        raise ValueError("content_bytes mismatch")
    return status, content, content_bytes


class RecallResult:
    def __init__(
        self,
        outcome: str,
        http_status: int | None = None,
        content_bytes: int | None = None,
        content: str | None = None,
    ) -> None:
        self.outcome = outcome
        self.http_status = http_status
        self.content_bytes = content_bytes
        self.content = content
        # The code of the server's PowerContext-Warning (a scope id that looks mistyped).
        self.warning: str | None = None


def warning_code(headers: Mapping[str, str]) -> str | None:
    """The code of a ``PowerContext-Warning`` header (``<code>: <sentence>``): only the
    code goes to the diagnostic, as its sentence names the scope."""
    code = headers.get("powercontext-warning", "").partition(":")[0].strip()
    if 0 < len(code) <= 40 and all(c == "_" or "a" <= c <= "z" for c in code):
        return code
    return None


def outcome_for_status(status: int) -> str | None:
    """The diagnostic outcome of a non-200 answer (None for 200)."""
    if status == 200:
        return None
    if status in (401, 403):
        return AUTHENTICATION_FAILED
    if status == 404:
        return VERSION_MISMATCH
    if 500 <= status <= 599:
        return SERVER_UNAVAILABLE
    return INVALID_RESPONSE  # redirects, other 4xx, anything unexpected


def prepare(config: Config, scope_id: str, query: str, deadline: float) -> RecallResult:
    payload = {"scope_id": scope_id, "query": query, "max_bytes": MAX_BYTES}
    try:
        status, headers, body = http_request(
            config, "POST", "/v1/context/prepare", payload, deadline
        )
    except Unavailable as exc:
        return RecallResult(SERVER_UNAVAILABLE, exc.status)
    except Invalid as exc:
        return RecallResult(INVALID_RESPONSE, exc.status)
    outcome = outcome_for_status(status)
    if outcome is not None:
        return RecallResult(outcome, status)
    try:
        context_status, content, content_bytes = parse_prepared(body)
    except ValueError:  # includes JSON and Unicode decoding errors
        return RecallResult(INVALID_RESPONSE, status)
    if context_status == "empty":
        result = RecallResult(EMPTY, status, 0)
    else:
        result = RecallResult(READY, status, content_bytes, content)
    result.warning = warning_code(headers)
    return result


def session(config: Config, scope_id: str, deadline: float) -> RecallResult:
    """``POST /v1/context/session``: the pack a session starts with, validated as prepare's."""
    payload = {"scope_id": scope_id, "max_bytes": SESSION_MAX_BYTES}
    try:
        status, headers, body = http_request(
            config, "POST", "/v1/context/session", payload, deadline
        )
    except Unavailable as exc:
        return RecallResult(SERVER_UNAVAILABLE, exc.status)
    except Invalid as exc:
        return RecallResult(INVALID_RESPONSE, exc.status)
    outcome = outcome_for_status(status)
    if outcome is not None:
        return RecallResult(outcome, status)
    try:
        context_status, content, content_bytes = parse_prepared(body, SESSION_MAX_BYTES)
    except ValueError:
        return RecallResult(INVALID_RESPONSE, status)
    if context_status == "empty":
        result = RecallResult(EMPTY, status, 0)
    else:
        result = RecallResult(READY, status, content_bytes, content)
    result.warning = warning_code(headers)
    return result


# -------------------------------------------------------------------------- capture


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def strip_private(prompt: str, tag: str = "private") -> str:
    """``prompt`` without its ``<private>...</private>`` spans (any case, across lines;
    an unclosed one runs to the end), as the server strips them
    (``powercontext.redaction.strip_private``). Plain string search: cheaper to import
    and to run than a regular expression for a tag that is almost never there."""
    opening, closing = "<" + tag + ">", "</" + tag + ">"
    # ASCII-only lower-casing keeps every offset (str.lower may lengthen a character).
    lowered = prompt.translate(_ASCII_LOWER)
    start = lowered.find(opening)
    if start == -1:
        return prompt
    kept = []
    position = 0
    while start != -1:
        kept.append(prompt[position:start])
        end = lowered.find(closing, start + len(opening))
        if end == -1:
            position = len(prompt)
            break
        position = end + len(closing)
        start = lowered.find(opening, position)
    kept.append(prompt[position:])
    return "".join(kept)


def session_key(agent: str, hook_input: Mapping[str, Any]) -> str:
    """The session part of a capture id: ``session_id``, or Copilot CLI's ``sessionId``
    (its payload has no ``session_id``); "" when the host sent no string."""
    name = "sessionId" if agent == "copilot" else "session_id"
    value = hook_input.get(name)
    return value if isinstance(value, str) else ""


def _copilot_timestamp(hook_input: Mapping[str, Any]) -> str | None:
    """Copilot CLI's ``timestamp`` (epoch milliseconds) as text, or None when it is not a
    number or a non-empty string. It names the invocation, not the moment of sending, so
    a retry of the same hook call carries the same value."""
    value = hook_input.get("timestamp")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)  # json.loads refuses integers too long to print
    if isinstance(value, float):
        return repr(value)  # "inf" and "nan" included: the key only has to be stable
    if isinstance(value, str) and value:
        return value
    return None


def turn_key(hook_input: Mapping[str, Any], agent: str = "") -> str:
    """The turn part of a capture id.

    Codex sends ``turn_id``. Claude Code sends no ``turn_id``; its ``prompt_id`` is used
    when present, else the transcript path (then the same prompt sent twice in one
    session is one source: the second capture is an idempotent repeat). Copilot CLI
    sends neither: its ``timestamp`` tells one prompt of a session from the next.
    """
    for name in ("turn_id", "prompt_id"):
        value = hook_input.get(name)
        if isinstance(value, str) and value:
            return name + ":" + value
    if agent == "copilot":
        timestamp = _copilot_timestamp(hook_input)
        return "timestamp:" + timestamp if timestamp is not None else ""
    transcript = hook_input.get("transcript_path")
    return "transcript:" + transcript if isinstance(transcript, str) else ""


def capture_source_id(scope_id: str, session_id: str, turn: str, prompt: str) -> str:
    """``prompt:<sha256>`` over scope, session, turn and prompt: stable across retries."""
    canonical = json.dumps(
        [SOURCE_ID_TAG, scope_id, session_id, turn, prompt], separators=(",", ":")
    )
    return "prompt:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def capture_metadata(agent: str, hook_input: Mapping[str, Any]) -> dict[str, str]:
    """Deterministic metadata (no timestamps): the same turn always sends the same payload."""
    metadata = {"agent": agent, "event": "UserPromptSubmit"}
    for name in ("session_id", "turn_id", "prompt_id"):
        value = session_key(agent, hook_input) if name == "session_id" else hook_input.get(name)
        if isinstance(value, str) and 0 < len(value) <= METADATA_VALUE_MAX_CHARS:
            metadata[name] = value
    return metadata


def capture(
    config: Config,
    agent: str,
    scope_id: str,
    hook_input: Mapping[str, Any],
    prompt: str,
    deadline: float,
) -> None:
    """Send the prompt to the source journal; best effort, so its answer goes unread."""
    source_id = capture_source_id(
        scope_id, session_key(agent, hook_input), turn_key(hook_input, agent), prompt
    )
    payload = {
        "scope_id": scope_id,
        "source_id": source_id,
        "content": prompt,
        "metadata": capture_metadata(agent, hook_input),
    }
    try:
        http_request(config, "POST", "/v1/sources/content", payload, deadline, read_body_for=())
    except (Unavailable, Invalid):
        pass


# ----------------------------------------------------------------------------- main


def diagnostic(agent: str, result: RecallResult, event: str = PROMPT_EVENT) -> str:
    """The one stderr line: the outcome and counts, never prompt, scope or content (a
    scope warning by its code alone)."""
    line = {
        "component": AGENTS[agent],
        "event": DIAGNOSTIC_EVENTS[event],
        "outcome": result.outcome,
        "http_status": result.http_status,
        # The prepared-context status is the outcome, for the two outcomes that have one.
        "context_status": result.outcome if result.outcome in (EMPTY, READY) else None,
        "content_bytes": result.content_bytes,
    }
    if result.warning:
        line["warning"] = result.warning
    return json.dumps(line, separators=(",", ":"))


def is_event(agent: str, event: str, hook_input: Mapping[str, Any]) -> bool:
    """Whether ``hook_input`` is the host's ``event`` (see ``HOST_EVENTS``)."""
    name = HOST_EVENTS.get(agent, {}).get(event, event)
    if name is None:  # Copilot names no event; a Claude-style payload must still match
        sent = hook_input.get("hook_event_name")
        return sent is None or sent == event
    return hook_input.get("hook_event_name") == name


def hook_output(content: str, event: str = PROMPT_EVENT, agent: str = "claude") -> str:
    # ASCII escapes keep the bytes on stdout independent of any locale; a JSON reader
    # gets the content back unchanged.
    if agent == "copilot":  # Copilot reads ``additionalContext`` at the top level
        return json.dumps({"additionalContext": content}, separators=(",", ":"))
    name = HOST_EVENTS.get(agent, {}).get(event) or event
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": name, "additionalContext": content}},
        separators=(",", ":"),
    )


def _pack_marker(
    hook_input: Mapping[str, Any], key: str = "session_id", prefix: str = "session-"
) -> str | None:
    """The file that remembers the last session pack given to this session, or None when
    the host sends no session id (``hook_input[key]``) or the directory is not this
    user's own. In a per-user directory of the temporary directory: it only has to
    outlive the gap between two hook runs of one session."""
    session_id = hook_input.get(key)
    getuid = getattr(os, "getuid", None)
    if not isinstance(session_id, str) or not session_id or getuid is None:
        return None
    # Not ``tempfile.gettempdir()``: importing tempfile costs milliseconds per prompt.
    temp = os.environ.get("TMPDIR") or "/tmp"  # noqa: S108 (owner and mode checked below)
    directory = os.path.join(temp, f"powercontext-hook-{getuid()}")
    try:
        os.mkdir(directory, 0o700)
    except OSError:
        pass
    try:
        info = os.lstat(directory)
    except OSError:
        return None
    # Another user's directory (made first, to plant markers) or a link: not used.
    if info.st_uid != getuid() or (info.st_mode & 0o777) != 0o700 or os.path.islink(directory):
        return None
    name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return os.path.join(directory, prefix + name)


def first_session_pack(agent: str, hook_input: Mapping[str, Any], content: str) -> bool:
    """False for a Codex compaction's SessionStart when this session was already given
    exactly ``content`` and no prompt came since (Codex keeps that pack in the next
    request); records what was given otherwise. Only there: after Claude Code's
    compaction or any ``/clear`` the earlier pack is gone from the context. Any trouble
    with the marker file means True: a second pack costs bytes, a missing one recall."""
    if agent != "codex":
        return True
    marker = _pack_marker(hook_input)
    if marker is None:
        return True
    if hook_input.get("source") != "compact":
        _record(marker, content)
        return True
    digest = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    try:
        with open(marker, encoding="ascii") as handle:
            if handle.read(64) == digest:
                return False
    except (OSError, ValueError):
        pass
    _record(marker, content)
    return True


def _record(marker: str, content: str) -> None:
    digest = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()
    try:
        with open(marker, "w", encoding="ascii") as handle:
            handle.write(digest)
    except OSError:
        pass


def forget_session_pack(hook_input: Mapping[str, Any]) -> None:
    """A prompt went by: the next SessionStart (a compaction) gives the pack again."""
    marker = _pack_marker(hook_input)
    if marker is not None:
        _unlink(marker)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# ------------------------------------------------------- Copilot CLI's session pack
#
# Copilot CLI starts the sessionStart hook and, under ``copilot -p`` (or with any first
# prompt given on its command line, then handed to the session hook as
# ``initialPrompt``), the prompt's userPromptSubmitted hook 0.2 s later, side by side. It
# builds the first user message as soon as the prompt's hook has answered: a session
# pack that comes later reaches no request of that turn. So the prompt hook, which
# Copilot waits for, carries the session pack itself on a session's first prompt, and
# the session hook gives it only when no prompt runs beside it (an interactive start).
# One marker per session, created with O_EXCL by whichever hook delivers first, makes
# it exactly once across the two concurrent processes.

COPILOT_MARKER_PREFIX = "copilot-"
# Markers of sessions older than this are swept at each session start. A session still
# running past it gets its pack once more, on its next prompt: bytes, not a lost recall.
COPILOT_MARKER_MAX_AGE_S = 7 * 24 * 3600


def copilot_marker(hook_input: Mapping[str, Any]) -> str | None:
    """This Copilot session's marker (``sessionId``), or None when there is none to use:
    then the session hook gives the pack as it comes and the prompt hook never does."""
    return _pack_marker(hook_input, "sessionId", COPILOT_MARKER_PREFIX)


def claim_session_pack(marker: str) -> bool:
    """True for the one process that creates ``marker``: O_CREAT|O_EXCL is atomic, so of
    two hooks answering at once exactly one gives the session pack. O_NOFOLLOW: a link
    planted in its place is never followed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.close(os.open(marker, flags, 0o600))
    except OSError:  # FileExistsError above all: the other hook delivered
        return False
    return True


def sweep_markers(marker: str, now: float) -> None:
    """Remove Copilot markers older than ``COPILOT_MARKER_MAX_AGE_S``: one empty file per
    session, so the directory stays bounded by the sessions of the last week."""
    directory = os.path.dirname(marker)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not name.startswith(COPILOT_MARKER_PREFIX):
            continue
        path = os.path.join(directory, name)
        try:
            if now - os.lstat(path).st_mtime > COPILOT_MARKER_MAX_AGE_S:
                os.unlink(path)
        except OSError:
            pass


def run_compact(agent: str, raw: bytes | None) -> None:
    """Copilot CLI's preCompact, before a compaction (``/compact`` or automatic): the
    session's pack goes with the conversation it is in, so this session's marker is
    dropped and its next prompt carries the pack again, once (as after a resume). No
    server call, no output: Copilot reads none, and nothing here may hold the compaction
    up. A payload without a ``sessionId`` changes nothing."""
    if agent != "copilot" or raw is None:
        return
    try:
        hook_input = json.loads(raw.decode("utf-8"))
    except ValueError:
        return
    if not isinstance(hook_input, dict) or not is_event(agent, COMPACT_EVENT, hook_input):
        return
    marker = copilot_marker(hook_input)
    if marker is not None:
        _unlink(marker)


def _write(fd: int, text: str) -> None:
    data = text.encode("utf-8")
    while data:
        try:
            written = os.write(fd, data)
        except OSError:
            return
        data = data[written:]


def _in_thread(target: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(target(*args))
        except Exception as exc:  # a bug here must not escape as a traceback
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def run_hook(
    agent: str,
    raw: bytes,
    environ: Mapping[str, str],
    started: float,
    event: str = PROMPT_EVENT,
) -> tuple[str | None, str | None]:
    """(stdout text, stderr line) for one hook invocation of ``event``; both may be None.
    Any other event is skipped."""
    try:
        hook_input = json.loads(raw.decode("utf-8"))
    except ValueError:
        hook_input = None
    if not isinstance(hook_input, dict) or not is_event(agent, event, hook_input):
        return None, diagnostic(agent, RecallResult(SKIPPED), event)
    if event == SESSION_EVENT:
        return run_session(agent, hook_input, environ, started)
    prompt = hook_input.get("prompt")
    if not isinstance(prompt, str):
        return None, diagnostic(agent, RecallResult(SKIPPED))
    if agent == "codex":
        forget_session_pack(hook_input)
    # What the user marked private never leaves this process: not captured, not searched.
    prompt = strip_private(prompt)
    if agent == "gemini":
        # In ``gemini -p`` the prompt BeforeAgent sees starts with the SessionStart hooks'
        # output, ``<hook_context>...</hook_context>``: the hooks' words, not the user's,
        # so neither captured nor searched.
        without = strip_private(prompt, "hook_context")
        prompt = without.lstrip() if without != prompt else prompt
    if not prompt.strip():
        return None, diagnostic(agent, RecallResult(SKIPPED))

    config = load_config(environ)
    deadline = started + config.budget
    query = prompt[:QUERY_MAX_CHARS]
    want_recall = config.recall and config.error is None and bool(query.strip())
    want_capture = config.capture and config.error is None and len(prompt) <= CAPTURE_MAX_CHARS
    if not (want_recall or want_capture):
        return None, diagnostic(agent, RecallResult(SKIPPED))

    # No fallback when this fails (a deleted working directory): another scope would
    # recall and capture in the wrong place. main() fails open with "skipped".
    cwd = hook_input.get("cwd")
    scope_id = resolve_scope(cwd if isinstance(cwd, str) else None, environ)

    # Copilot CLI: on a session's first prompt the session's pack comes with this one's
    # (see claim_session_pack), until a definite answer has been given for the session.
    marker = copilot_marker(hook_input) if agent == "copilot" and want_recall else None
    if marker is not None and os.path.lexists(marker):
        marker = None

    # Concurrent, so the agent waits for the slowest call rather than for all in turn;
    # one deadline for all of them.
    session_thread = None
    if marker is not None:
        session_thread, session_box = _in_thread(session, config, scope_id, deadline)
    capture_thread = None
    if want_capture:
        capture_thread, _ = _in_thread(
            _capture_after,
            session_thread,
            started + config.budget / 2,
            config,
            agent,
            scope_id,
            hook_input,
            prompt,
            deadline,
        )
    result = RecallResult(SKIPPED)
    if want_recall:
        recall_thread, box = _in_thread(prepare, config, scope_id, query, deadline)
        result = _joined(recall_thread, box, deadline)
    session_result = None
    if session_thread is not None:
        session_result = _joined(session_thread, session_box, deadline)
    if capture_thread is not None:
        capture_thread.join(max(deadline - time.monotonic(), 0))

    contents: list[str] = []
    lines: list[str | None] = []
    if session_result is not None and marker is not None:
        if session_result.outcome not in (READY, EMPTY):
            # No definite answer (a down server): no claim, so the next prompt tries again.
            lines.append(diagnostic(agent, session_result, SESSION_EVENT))
        elif claim_session_pack(marker) and session_result.content is not None:
            contents.append(session_result.content)
            lines.append(_warned(agent, session_result, SESSION_EVENT))
    if result.outcome == READY and result.content is not None:
        contents.append(result.content)
        lines.append(_warned(agent, result))
    else:
        lines.append(diagnostic(agent, result))
    err = "\n".join(line for line in lines if line) or None
    if contents:
        # Each pack whole and unchanged, the session's first, as a session would have it.
        return hook_output("\n\n".join(contents), PROMPT_EVENT, agent), err
    return None, err


def _capture_after(
    first: threading.Thread | None,
    until: float,
    config: Config,
    agent: str,
    scope_id: str,
    hook_input: Mapping[str, Any],
    prompt: str,
    deadline: float,
) -> None:
    """:func:`capture`, once ``first`` (the session pack's call) has its answer or at
    ``until``: the session pack picks entries by the scope's recent prompts, and it is the
    pack the session had before this prompt, as the session hook would have given it."""
    if first is not None:
        first.join(max(until - time.monotonic(), 0))
    capture(config, agent, scope_id, hook_input, prompt, deadline)


def _joined(thread: threading.Thread, box: list[Any], deadline: float) -> RecallResult:
    """The result of a recall thread, waited for until ``deadline`` at most."""
    thread.join(max(deadline - time.monotonic(), 0))
    if thread.is_alive():  # e.g. a name lookup the socket timeouts cannot bound
        return RecallResult(SERVER_UNAVAILABLE)
    if box and isinstance(box[0], RecallResult):
        return box[0]
    return RecallResult(INVALID_RESPONSE)


def _warned(agent: str, result: RecallResult, event: str = PROMPT_EVENT) -> str | None:
    """A delivered pack has no diagnostic line, unless the server warned of the scope."""
    return diagnostic(agent, result, event) if result.warning else None


def run_session(
    agent: str, hook_input: Mapping[str, Any], environ: Mapping[str, str], started: float
) -> tuple[str | None, str | None]:
    """A ``SessionStart`` (startup, resume, clear, or after a compaction): the session's
    pack for the scope. Nothing is captured: there is no prompt, and the call writes
    nothing on the server either."""
    config = load_config(environ)
    if not config.recall or config.error is not None:
        return None, diagnostic(agent, RecallResult(SKIPPED), SESSION_EVENT)
    deadline = started + config.budget
    marker = copilot_marker(hook_input) if agent == "copilot" else None
    if marker is not None:
        if hook_input.get("source") == "resume":
            # A resumed session is given the pack again, as Codex's is: what the project
            # remembers may have changed since. Done first thing, well before the prompt
            # hook (started 0.2 s after this one) looks.
            _unlink(marker)
        sweep_markers(marker, time.time())
        initial = hook_input.get("initialPrompt")
        if isinstance(initial, str) and strip_private(initial).strip():
            # The prompt's hook runs beside this one and Copilot waits for it alone: it
            # gives the session pack, so this hook gives nothing and asks nothing.
            return None, diagnostic(agent, RecallResult(SKIPPED), SESSION_EVENT)
    cwd = hook_input.get("cwd")
    scope_id = resolve_scope(cwd if isinstance(cwd, str) else None, environ)
    thread, box = _in_thread(session, config, scope_id, deadline)
    result = _joined(thread, box, deadline)
    if marker is not None and result.outcome in (READY, EMPTY):
        if not claim_session_pack(marker):
            # A prompt's hook was quicker and gave this session its pack already.
            return None, diagnostic(agent, RecallResult(SKIPPED), SESSION_EVENT)
    if result.outcome == READY and result.content is not None:
        if not first_session_pack(agent, hook_input, result.content):
            # The same pack is already in this session, with no prompt since: Codex fires
            # SessionStart on resume and again on the auto-compaction right after it, and
            # its next request carries both.
            return None, diagnostic(agent, RecallResult(SKIPPED), SESSION_EVENT)
        return (
            hook_output(result.content, SESSION_EVENT, agent),
            _warned(agent, result, SESSION_EVENT),
        )
    return None, diagnostic(agent, result, SESSION_EVENT)


def read_stdin(deadline: float) -> bytes | None:
    """All of stdin, or None if it is not closed (or not readable) by ``deadline``.

    A host that leaves the pipe open must not hold the agent up past the budget. The read
    blocks in a daemon thread, which works for pipes, files and terminals on every
    platform (``select`` does not on Windows pipes); ``os._exit`` in :func:`main` leaves it
    behind.
    """
    thread, box = _in_thread(sys.stdin.buffer.read)
    thread.join(max(deadline - time.monotonic(), 0))
    if thread.is_alive() or not box or not isinstance(box[0], bytes):
        return None
    return box[0]


def main(agent: str, event: str = PROMPT_EVENT) -> None:
    """Entry point of the hook scripts, one per agent and event. Always exits 0, promptly."""
    if event == COMPACT_EVENT:
        try:
            run_compact(agent, read_stdin(STARTED + load_config(os.environ).budget))
        finally:  # whatever happened, silently: no pack was asked for, none is missing
            os._exit(0)
    out: str | None = None
    err: str | None = None
    try:
        raw = read_stdin(STARTED + load_config(os.environ).budget)
        if raw is None:
            err = diagnostic(agent, RecallResult(SKIPPED), event)
        else:
            out, err = run_hook(agent, raw, os.environ, STARTED, event)
    except Exception:  # the hook itself failed, not the server's answer
        err = diagnostic(agent, RecallResult(SKIPPED), event)
    if out is not None:
        _write(1, out)
    if err is not None:
        _write(2, err + "\n")
    # os._exit: a worker still blocked on the network must not hold the agent up.
    os._exit(0)
