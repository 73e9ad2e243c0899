"""Keep one embedded OceanBase seekdb running, for ``manage.py serve --engine seekdb``
(``server.seekdb``) or for a test session (``tests/oceanbase/seekdb.py``).

seekdb (``pylibseekdb``) runs as a child of the process that opened it and stops when that
process lets go, so a server or a test session needs one long-lived holder. This script is that
holder: it starts seekdb in ``--data-dir``, writes a PowerContext database URL for it to
``--url-file`` (atomically: a reader sees the whole URL or no file), and stays alive until
SIGTERM/SIGINT or until its parent dies. It creates no database or table itself.

Run it with the interpreter that has ``pylibseekdb`` installed::

    python server/seekdb_holder.py --data-dir /tmp/x/db --url-file /tmp/x/url

Standard library plus ``pylibseekdb`` only: it must not import Django or the project.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask Linux to send us SIGTERM when the parent dies (best effort elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the ppid poll in main() still catches an orphaned holder


def database_url(options: dict[str, Any], database: str) -> str:
    """The ``oceanbase://`` URL for pylibseekdb's ``connection_options()``."""
    user = quote(options.get("user") or "root", safe="")
    name = quote(database, safe="")
    if options.get("unix_socket"):
        query = urlencode({"unix_socket": options["unix_socket"]})
        return f"oceanbase://{user}@localhost/{name}?{query}"
    # TCP: pylibseekdb leaves the host to the driver's default (local).
    return f"oceanbase://{user}@127.0.0.1:{int(options['port'])}/{name}"


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _reap_children(timeout: float = 10.0) -> None:
    """Wait for seekdb's process to exit, so it is not left behind as a zombie."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no children left
        if pid == 0:
            time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, type=Path, help="seekdb's data directory")
    parser.add_argument("--url-file", required=True, type=Path, help="where to write the URL")
    parser.add_argument(
        "--database",
        default="powercontext",
        help="database name put in the URL (not created; Django's test runner creates test_<name>)",
    )
    args = parser.parse_args(argv)

    parent = os.getppid()
    _die_with_parent()
    stop = threading.Event()

    def _request_stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)

    # A test server has no business phoning home.
    os.environ.setdefault("TELEMETRY_ENABLED", "false")
    import pylibseekdb

    data_dir = args.data_dir.expanduser().resolve()
    data_dir.parent.mkdir(parents=True, exist_ok=True)  # seekdb needs the parent to exist
    started = time.monotonic()
    instance = pylibseekdb.open(db_dir=str(data_dir))
    try:
        url = database_url(instance.connection_options(), args.database)
        write_atomically(args.url_file, url + "\n")
        print(
            f"seekdb ready in {time.monotonic() - started:.2f}s at {data_dir}",
            file=sys.stderr,
            flush=True,
        )
        # The ppid poll covers platforms without PDEATHSIG and a parent that died
        # before prctl() ran.
        while not stop.wait(0.5):
            if os.getppid() != parent:
                break
    finally:
        with contextlib.suppress(FileNotFoundError):
            args.url_file.unlink()
        instance.close()
        _reap_children()
    print("seekdb stopped", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
