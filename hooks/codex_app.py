"""Ask Codex itself what it will do: a few JSON-RPC calls to ``codex app-server``.

The doctor uses this to see the hooks as Codex discovers them (which command, from which
copy, trusted or not: ``hooks/list``), the effective MCP configuration (``config/read``)
and to record trust for PowerContext's own hook without the TUI (``config/batchWrite``,
the call the TUI's ``/hooks`` makes). Codex computes the trust hashes; nothing here
re-implements them. The app server speaks JSON-RPC 2.0, one JSON object a line, on
stdin/stdout. It runs no hook and no model call for these methods.

Standard library only, Python 3.9+.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TIMEOUT = 30.0


class CodexError(Exception):
    """Codex could not be asked (not installed, failed, or answered an error)."""


def find_codex(path: str) -> str | None:
    """``codex`` on ``path`` (absolute entries only), resolved, or None."""
    found = shutil.which("codex", path=path)
    return os.path.realpath(found) if found else None


def call(
    codex: str, calls: list[tuple[str, dict]], cwd: str, timeout: float = TIMEOUT
) -> list[Any]:
    """The results of ``calls`` (method, params), in order, from one ``codex app-server``.

    Raises CodexError when the process cannot start, a call answers an error, or the
    answers do not all come within ``timeout`` seconds.
    """
    try:
        process = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
        )
    except OSError as exc:
        raise CodexError(f"cannot start {codex} app-server: {exc}") from exc
    lines: queue.Queue = queue.Queue()

    stdin, stdout = process.stdin, process.stdout
    if stdin is None or stdout is None:  # never: both are pipes
        raise CodexError("codex app-server has no pipes")

    def read() -> None:
        for line in stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"clientInfo": {"name": "powercontext-doctor", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
    ]
    messages += [
        {"jsonrpc": "2.0", "id": index + 1, "method": method, "params": params}
        for index, (method, params) in enumerate(calls)
    ]
    results: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    try:
        stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        stdin.flush()
        while len(results) < len(calls):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CodexError(f"codex app-server did not answer within {timeout:.0f} s")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise CodexError("codex app-server ended before answering")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            ident = message.get("id") if isinstance(message, dict) else None
            if not isinstance(ident, int) or not 1 <= ident <= len(calls):
                continue
            if "error" in message:
                error = message["error"]
                text = error.get("message") if isinstance(error, dict) else error
                raise CodexError(f"{calls[ident - 1][0]} failed: {text}")
            results[ident] = message.get("result")
    except OSError as exc:
        raise CodexError(f"codex app-server failed: {exc}") from exc
    finally:
        try:
            stdin.close()
        except OSError:
            pass
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return [results[index + 1] for index in range(len(calls))]


def toml_key(key: str) -> str:
    """A config key path segment, quoted as Codex's keyPath syntax wants it."""
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def trust_edit(entry: dict) -> dict:
    """The config edit that records trust for one ``hooks/list`` entry: what ``/hooks``
    writes. Codex reports a plugin hook's hash as ``<command hash>/<content hash>``."""
    command_hash, _, content_hash = str(entry["currentHash"]).partition("/")
    value = {"trusted_hash": command_hash}
    if content_hash:
        value["trusted_content_hash"] = content_hash
    return {
        "keyPath": "hooks.state." + toml_key(str(entry["key"])),
        "value": value,
        "mergeStrategy": "upsert",
    }
