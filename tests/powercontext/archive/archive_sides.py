"""Another database for a test to carry an archive to: a SQLite data directory of its
own, driven through ``manage.py`` in subprocesses.

SQLite costs nothing to start, so the round trip through a second engine runs in both
runs of the suite: the suite's own engine (SQLite, or OceanBase in the
``POWERCONTEXT_TEST_DATABASE=oceanbase`` run) in the test process, SQLite beside it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]


class SqliteSide:
    """``home`` is the data directory (its database ``powercontext.sqlite3``)."""

    def __init__(self, home: Path, *, embeddings: bool = True) -> None:
        self.home = home
        self.embeddings = embeddings
        home.mkdir(parents=True, exist_ok=True)

    @property
    def database(self) -> Path:
        return self.home / "powercontext.sqlite3"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        # manage.py's own settings, on this data directory's SQLite.
        for name in (
            "DJANGO_SETTINGS_MODULE",
            "POWERCONTEXT_DATABASE_URL",
            "POWERCONTEXT_TEST_DATABASE",
            "POWERCONTEXT_API_TOKEN",
        ):
            env.pop(name, None)
        env["POWERCONTEXT_HOME"] = str(self.home)
        if not self.embeddings:
            env["POWERCONTEXT_EMBEDDINGS"] = "off"
        return env

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"manage.py {' '.join(args)} exited {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def shell(self, code: str) -> str:
        """Run ``code`` in ``manage.py shell``; its standard output."""
        return self.manage("shell", "--no-imports", "-c", code).stdout

    def session(
        self, code: str, scopes: list[str], *, every: int = 1, export: Path | None = None
    ) -> tuple[str, dict[str, Any]]:
        """One process: ``code``, then ``archive_history.probe`` of ``scopes`` through
        this side's API (a plain test client), then an export to ``export``. Returns
        what ``code`` printed and what the probe read."""
        then = f"call_command('export', out=Path({str(export)!r}))\n" if export else ""
        output = self.shell(
            "from pathlib import Path\n"
            "from django.core.management import call_command\n"
            "from django.test import Client\n"
            "from tests.conftest import ApiClient\n"
            "from tests.powercontext.archive.archive_history import probe_json\n"
            f"{code}\n"
            f"read = probe_json(ApiClient(Client(HTTP_HOST='localhost')), {scopes!r}, "
            f"every={every})\n"
            f"{then}"
            "print(read)\n"
        )
        printed, _, read = output.rstrip("\n").rpartition("\n")
        result: dict[str, Any] = json.loads(read)
        return printed, result
