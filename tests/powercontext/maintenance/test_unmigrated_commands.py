"""The commands on a fresh data directory that was never migrated (issue 14.9): the ones
natural before the first ``serve`` (createsuperuser, reviewer_token) migrate first; the
ones that read what is there (check_integrity, rebuild_index) exit 1 with one line that
says what to run, never a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import sqlite_only

pytestmark = [
    pytest.mark.slow,
    sqlite_only("runs manage.py on a fresh SQLite data directory"),
]
REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def manage(tmp_path):
    env = {
        **os.environ,
        "POWERCONTEXT_HOME": str(tmp_path / "home"),
        "DJANGO_SETTINGS_MODULE": "server.settings",
        "DJANGO_SUPERUSER_PASSWORD": "a long enough password 1",
    }
    env.pop("POWERCONTEXT_DATABASE_URL", None)

    def run(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return run


@pytest.mark.parametrize(
    ("command", "verb"), [("check_integrity", "check"), ("rebuild_index", "rebuild")]
)
def test_reading_commands_say_what_to_run_in_one_line(manage, command, verb):
    result = manage(command)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"Nothing to {verb}: the database at " in line
    assert (
        "was never migrated. Run `manage.py serve` (it migrates first) or `manage.py migrate`."
        in line
    )
    assert result.stdout == ""


def test_a_partly_migrated_database_is_named_too(manage):
    assert manage("migrate", "--verbosity", "0").returncode == 0
    assert manage("migrate", "sessions", "zero", "--verbosity", "0").returncode == 0
    result = manage("check_integrity")
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "lacks 1 migration(s): run `manage.py migrate` (or `manage.py serve`) first." in line


def test_createsuperuser_migrates_first(manage):
    created = manage(
        "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.org"
    )
    assert created.returncode == 0, created.stdout + created.stderr
    assert "Superuser created successfully." in created.stdout
    assert "pending migration(s)" in created.stderr
    # The database is complete: the integrity check runs (and passes) without a migrate.
    checked = manage("check_integrity")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    found = manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        "print(User.objects.get(username='admin').is_superuser)",
    )
    assert found.stdout.strip().splitlines()[-1] == "True"
    # Once migrated, nothing more is applied or said.
    again = manage(
        "createsuperuser", "--noinput", "--username", "other", "--email", "other@example.org"
    )
    assert again.returncode == 0, again.stderr
    assert "migration" not in again.stderr


def test_reviewer_token_migrates_first(manage):
    issued = manage("reviewer_token", "rita", "--create")
    assert issued.returncode == 0, issued.stdout + issued.stderr
    (token,) = issued.stdout.strip().splitlines()
    assert len(token) >= 32
    assert "pending migration(s)" in issued.stderr
    assert "Traceback" not in issued.stderr
