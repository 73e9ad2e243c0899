"""OceanBase one command away: ``manage.py serve --engine seekdb`` serves on seekdb, the
embedded OceanBase kernel (``pylibseekdb``, in ``requirements-oceanbase.txt``), kept in
the data directory.

seekdb runs as a child of the process that opens it, so a holder process
(``server/seekdb_holder.py``, the one the test suite uses) opens it in
``POWERCONTEXT_HOME/seekdb`` and writes its database URL; ``serve`` then creates the
database (utf8mb4, utf8mb4_bin: docs/oceanbase.md §2) and serves on it. The holder stops
seekdb when ``serve`` stops it, or when ``serve`` dies. The data stays for the next start.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

HOLDER = Path(__file__).with_name("seekdb_holder.py")
DIRECTORY = "seekdb"
DATABASE = "powercontext"
CREATE_DATABASE = (
    "CREATE DATABASE IF NOT EXISTS powercontext DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
)
# seekdb starts in about a second; a first start on a slow disk takes longer.
START_TIMEOUT_SECONDS = 120.0
DOC = "docs/oceanbase.md §5"


class SeekdbUnavailable(Exception):
    """seekdb could not be started or prepared; the message says why and what to do."""


@dataclass
class Seekdb:
    """A running holder: ``url`` is the ``oceanbase://`` URL of its database."""

    url: str
    directory: Path
    process: subprocess.Popen[bytes]

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the holder, and so seekdb (its data stays). Idempotent."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)


def start(home: Path, *, timeout: float = START_TIMEOUT_SECONDS) -> Seekdb:
    """Start seekdb in ``home/seekdb`` and create the database; the caller stops it.

    Raises SeekdbUnavailable when pylibseekdb or mysqlclient is missing, or seekdb does
    not come up (the message carries the end of its log).
    """
    for module, what in (("pylibseekdb", "seekdb"), ("MySQLdb", "mysqlclient")):
        try:
            __import__(module)
        except ImportError:
            raise SeekdbUnavailable(
                f"--engine seekdb needs {what}: pip install -r requirements-oceanbase.txt "
                f"(see {DOC})."
            ) from None
    directory = home / DIRECTORY
    directory.mkdir(mode=0o700, exist_ok=True)
    url_file = directory / "database-url"
    log_path = directory / "seekdb-holder.log"
    with contextlib.suppress(FileNotFoundError):
        url_file.unlink()
    with log_path.open("ab") as log:
        # Our own interpreter running our own script, with paths of the data directory.
        process = subprocess.Popen(  # noqa: S603
            [
                sys.executable,
                str(HOLDER),
                "--data-dir",
                str(directory / "db"),
                "--url-file",
                str(url_file),
                "--database",
                DATABASE,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    seekdb = Seekdb(url="", directory=directory, process=process)
    try:
        seekdb.url = _wait_for_url(process, url_file, log_path, timeout)
        create_database(seekdb.url)
    except BaseException:
        seekdb.stop()
        raise
    return seekdb


def _wait_for_url(
    process: subprocess.Popen[bytes], url_file: Path, log_path: Path, timeout: float
) -> str:
    deadline = time.monotonic() + timeout
    while not url_file.exists():
        if process.poll() is not None:
            raise SeekdbUnavailable(
                f"seekdb did not start (it needs a non-loopback network interface and "
                f"about 1 GiB of memory; {DOC}). The end of {log_path}:\n{_tail(log_path)}"
            )
        if time.monotonic() > deadline:
            raise SeekdbUnavailable(
                f"seekdb did not start within {timeout:.0f}s ({DOC}). The end of "
                f"{log_path}:\n{_tail(log_path)}"
            )
        time.sleep(0.05)
    return url_file.read_text(encoding="utf-8").strip()


def create_database(url: str) -> None:
    """Create the database (``DATABASE``, the one the URL names) if it is missing, as
    docs/oceanbase.md §2 does."""
    import MySQLdb

    parts = urlsplit(url)
    options: dict[str, object] = {"user": unquote(parts.username or "root")}
    socket = parse_qs(parts.query).get("unix_socket")
    if socket:
        options["unix_socket"] = socket[0]
    else:
        options.update(host=parts.hostname or "127.0.0.1", port=parts.port or 2881)
    connection = MySQLdb.connect(**options)
    try:
        with connection.cursor() as cursor:
            cursor.execute(CREATE_DATABASE)
    finally:
        connection.close()


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
