"""An OceanBase for the test session: an external one, or embedded seekdb started here.

``start_test_oceanbase()`` is what a test session calls, *before Django reads its
settings* (settings.py turns POWERCONTEXT_DATABASE_URL into DATABASES when it is first
imported)::

    server = start_test_oceanbase()
    os.environ["POWERCONTEXT_DATABASE_URL"] = server.url
    ...
    server.stop()

With POWERCONTEXT_TEST_OCEANBASE_URL set, that URL is used as is and nothing is started
(stop() is then a no-op). Otherwise a holder process (``seekdb_holder.py``) starts seekdb
in a fresh temporary directory and keeps it alive; stop() ends it and removes the
directory. Django's test runner then creates and drops ``test_<database>`` on it.

Standard library only, so it can run before Django is configured.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

EXTERNAL_URL_ENV = "POWERCONTEXT_TEST_OCEANBASE_URL"
# The holder that `manage.py serve --engine seekdb` runs too (run by path: it imports
# neither Django nor the project).
HOLDER = Path(__file__).resolve().parents[2] / "server" / "seekdb_holder.py"


class SeekdbStartError(RuntimeError):
    """seekdb did not come up; the message carries the tail of its log."""


@dataclass
class TestOceanBase:
    """A running OceanBase for tests: ``url`` is an ``oceanbase://`` database URL."""

    __test__ = False  # not a pytest test class despite the name

    url: str
    process: subprocess.Popen[bytes] | None = None
    workdir: Path | None = None
    log_path: Path | None = None
    _stopped: bool = field(default=False, repr=False)

    @property
    def embedded(self) -> bool:
        return self.process is not None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the holder (and so seekdb) and delete its data. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


def start_seekdb(
    *,
    database: str = "powercontext",
    base_dir: Path | None = None,
    timeout: float = 120.0,
    python: str = sys.executable,
) -> TestOceanBase:
    """Start embedded seekdb in a holder process and wait until its URL is written.

    ``base_dir`` (created if missing) receives the data directory, the URL file and
    ``seekdb-holder.log``; by default a new temporary directory, deleted by stop().
    Raises SeekdbStartError if the holder exits or no URL appears within ``timeout``.
    """
    if base_dir is None:
        workdir = Path(tempfile.mkdtemp(prefix="powercontext-seekdb-"))
        owned = workdir
    else:
        workdir = Path(base_dir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        owned = None
    url_file = workdir / "database-url"
    log_path = workdir / "seekdb-holder.log"
    with contextlib.suppress(FileNotFoundError):
        url_file.unlink()
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                python,
                str(HOLDER),
                "--data-dir",
                str(workdir / "db"),
                "--url-file",
                str(url_file),
                "--database",
                database,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = TestOceanBase(url="", process=process, workdir=owned, log_path=log_path)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if url_file.exists():
                server.url = url_file.read_text(encoding="utf-8").strip()
                return server
            if process.poll() is not None:
                raise SeekdbStartError(
                    f"seekdb holder exited with {process.returncode}:\n{_tail(log_path)}"
                )
            if time.monotonic() > deadline:
                raise SeekdbStartError(
                    f"seekdb did not start within {timeout:.0f}s:\n{_tail(log_path)}"
                )
            time.sleep(0.05)
    except BaseException:
        server.stop()
        raise


def start_test_oceanbase(*, database: str = "powercontext", **kwargs: object) -> TestOceanBase:
    """The session's OceanBase: POWERCONTEXT_TEST_OCEANBASE_URL if set, else new seekdb.

    Keyword arguments go to start_seekdb() and are ignored for an external URL.
    """
    external = os.environ.get(EXTERNAL_URL_ENV, "").strip()
    if external:
        return TestOceanBase(url=external)
    return start_seekdb(database=database, **kwargs)  # type: ignore[arg-type]


@contextlib.contextmanager
def test_oceanbase(**kwargs: object) -> Iterator[TestOceanBase]:
    """start_test_oceanbase() as a context manager that always stops it."""
    server = start_test_oceanbase(**kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


test_oceanbase.__test__ = False  # type: ignore[attr-defined]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
