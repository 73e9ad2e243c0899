"""The servers running on a data directory, as each records itself there.

``manage.py serve`` writes ``servers/<pid>.json`` in the data directory once it listens
(its pid and URL) and deletes it when it stops. A second server on the same data warns
that one already runs there, and ``manage.py reviewer`` prints links to the URL the
server really listens on. A record whose process is gone (a killed server) is stale: it
is ignored, and deleted by the next server that starts.

In the kernel, not in ``server``: the families' commands read the records too.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

DIRECTORY = "servers"


@dataclass(frozen=True)
class ServerRecord:
    pid: int
    url: str
    path: Path


def server_record_write(*, home: Path, url: str) -> ServerRecord:
    """Record this process as a server of ``home`` listening at ``url`` (0600)."""
    directory = home / DIRECTORY
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / f"{os.getpid()}.json"
    temporary = path.with_name(f".{path.name}.partial")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        json.dump({"pid": os.getpid(), "url": url}, file)
    os.replace(temporary, path)  # a reader sees the whole record or none
    return ServerRecord(pid=os.getpid(), url=url, path=path)


def server_record_remove(record: ServerRecord) -> None:
    with contextlib.suppress(FileNotFoundError):
        record.path.unlink()


def running_servers(*, home: Path, forget_stale: bool = False) -> list[ServerRecord]:
    """The servers recorded in ``home`` whose process still runs, oldest record first
    (this process's own record left out). ``forget_stale`` deletes the others' records."""
    records = []
    try:
        paths = sorted((home / DIRECTORY).glob("*.json"), key=_modified)
    except FileNotFoundError:
        return []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            record = ServerRecord(pid=int(data["pid"]), url=str(data["url"]), path=path)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written, or not ours: never a reason to fail a start
        if record.pid == os.getpid():
            continue
        if _serves(record.pid):
            records.append(record)
        elif forget_stale:
            server_record_remove(record)
    return records


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _serves(pid: int) -> bool:
    """Whether ``pid`` runs, and (where /proc tells) is a ``serve``: after a crash the
    pid may have gone to another program."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    if sys.platform.startswith("linux"):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return b"serve" in command
    return True
