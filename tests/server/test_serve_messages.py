"""What ``manage.py serve`` tells a newcomer: the engine's name, a second server on the
same data, a database it cannot use."""

import signal
import subprocess
import sys
from types import SimpleNamespace

import pytest

from server.management.commands import serve as serve_command
from tests.server.test_serve import READY, REPO_ROOT, _env

# OceanBase's backend keeps Django's MySQL vendor (Django's MySQL code runs on it).
OCEANBASE_LIKE = SimpleNamespace(
    vendor="mysql", display_name="OceanBase", settings_dict={"NAME": "powercontext"}
)


def test_the_ready_line_calls_oceanbase_by_its_name(monkeypatch):
    monkeypatch.setattr(serve_command, "connections", {"default": OCEANBASE_LIKE})
    assert serve_command._data() == "OceanBase database powercontext"


class _Served:
    """``manage.py serve`` on ``home``, its stderr in a file (read whole once it stops)."""

    def __init__(self, home, name):
        self.stderr_path = home.parent / f"{home.name}-{name}.err"
        with self.stderr_path.open("w") as stderr:
            self.popen = subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--port", "0", "--no-vector-catch-up"],
                cwd=REPO_ROOT,
                env=_env(home),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        for line in self.popen.stdout:
            match = READY.match(line.rstrip("\n"))
            if match:
                self.url = match.group(1)
                return
        pytest.fail(f"serve did not start: {self.stderr_path.read_text()}")

    def stop(self):
        self.popen.send_signal(signal.SIGTERM)
        self.popen.communicate(timeout=60)
        return self.popen.returncode

    def kill(self):
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.communicate()

    @property
    def stderr(self):
        return self.stderr_path.read_text()


@pytest.fixture
def serve(tmp_path):
    started = []

    def start(name):
        served = _Served(tmp_path, name)
        started.append(served)
        return served

    yield start
    for served in started:
        served.kill()


@pytest.mark.slow
def test_a_second_server_on_the_same_data_says_the_first_one_serves_it(serve, tmp_path):
    first = serve("first")
    second = serve("second")
    assert second.stop() == 0
    assert (
        f"Warning: another PowerContext server (pid {first.popen.pid}, {first.url}) already "
        f"serves this data directory ({tmp_path.resolve()})"
    ) in second.stderr
    assert first.stop() == 0
    assert "another PowerContext server" not in first.stderr
    assert list((tmp_path / "servers").iterdir()) == []


@pytest.mark.slow
def test_the_record_of_a_server_that_died_is_ignored(serve, tmp_path):
    killed = serve("killed")
    killed.kill()  # SIGKILL: its record stays behind
    assert [path.name for path in (tmp_path / "servers").iterdir()] == [f"{killed.popen.pid}.json"]
    after = serve("after")
    assert after.stop() == 0
    assert "another PowerContext server" not in after.stderr
    assert list((tmp_path / "servers").iterdir()) == []
