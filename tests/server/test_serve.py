"""``manage.py serve``: the bind policy, start-up, serving, and a clean shutdown.

The process tests start real servers, always on 127.0.0.1 with port 0.
"""

import http.client
import io
import json
import logging
import os
import queue
import re
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from powercontext.api.errors import error_body
from server.addresses import is_loopback
from server.management.commands import serve as serve_command
from server.serving import (
    BindRefused,
    Server,
    check_bind_allowed,
    error_response,
    format_url,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"^PowerContext serving on (http://127\.0\.0\.1:(\d+)/) \(data: (.*)\)$")
START_TIMEOUT = 60  # a fresh SQLite database is migrated first
STOP_TIMEOUT = 10
# Only ever checked or refused here; no test listens beyond loopback.
ALL_INTERFACES = "0.0.0.0"  # noqa: S104


# -- the bind policy ------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.45.6.7", "::1", "[::1]", "localhost", "LocalHost", "::ffff:127.0.0.1"],
)
def test_loopback_hosts_are_loopback(host):
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host",
    [
        ALL_INTERFACES,
        "::",
        "[::]",
        "*",
        "",
        "10.1.2.3",
        "192.168.0.10",
        "::ffff:10.0.0.1",
        "example",
    ],
)
def test_wildcards_and_other_hosts_are_not_loopback(host):
    assert not is_loopback(host)


def test_non_loopback_bind_without_token_is_refused_with_the_fix_in_the_message():
    with pytest.raises(BindRefused, match="Set POWERCONTEXT_API_TOKEN"):
        check_bind_allowed(ALL_INTERFACES, token_configured=False)


def test_non_loopback_bind_with_token_is_allowed():
    check_bind_allowed(ALL_INTERFACES, token_configured=True)
    check_bind_allowed("::", token_configured=True)


def test_loopback_bind_needs_no_token():
    check_bind_allowed("127.0.0.1", token_configured=False)


def test_url_brackets_ipv6_literals():
    assert format_url("::1", 8000) == "http://[::1]:8000/"
    assert format_url("127.0.0.1", 0) == "http://127.0.0.1:0/"


def test_command_refuses_public_address_without_token(settings):
    settings.POWERCONTEXT_API_TOKEN = None
    with pytest.raises(CommandError, match="POWERCONTEXT_API_TOKEN"):
        call_command("serve", host=ALL_INTERFACES, port=0)


@pytest.mark.django_db
def test_command_serves_public_address_when_a_token_is_set(settings, monkeypatch):
    # Tests never listen beyond loopback: a stand-in server records what it was asked.
    settings.POWERCONTEXT_API_TOKEN = "agents-token"
    events = []

    class RecordingServer:
        def __init__(self, application, *, host, port, threads, **adjustments):
            events.append(("listen", host, port, threads))
            self.url = format_url(host, 8123)

        def run(self, *, grace, ready):
            events.append("run")
            ready()

    monkeypatch.setattr(serve_command, "Server", RecordingServer)
    monkeypatch.setattr(serve_command.startup, "ensure_indexes", lambda: events.append("indexes"))
    out = io.StringIO()
    call_command(
        "serve", host=ALL_INTERFACES, port=0, threads=2, no_vector_catch_up=True, stdout=out
    )

    assert events == ["indexes", ("listen", ALL_INTERFACES, 0, 2), "run"]
    assert "PowerContext serving on http://0.0.0.0:8123/ (data: " in out.getvalue()


class _ReadyServer:
    """A stand-in for the waitress server (nothing listens): it says it is ready, then
    runs the test's ``after_ready``."""

    after_ready = staticmethod(lambda: None)

    def __init__(self, application, *, host, port, threads, **adjustments):
        self.url = format_url(host, 8123)

    def run(self, *, grace, ready):
        ready()
        _ReadyServer.after_ready()


def _serve_with_a_model_load(monkeypatch, load):
    from server import background

    monkeypatch.setattr(background.hybrid, "can_embed", load)
    monkeypatch.setattr(serve_command, "Server", _ReadyServer)
    monkeypatch.setattr(serve_command.startup, "ensure_indexes", lambda: None)
    out = io.StringIO()
    call_command("serve", port=0, no_vector_catch_up=True, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_serve_says_it_serves_once_the_model_is_loaded(monkeypatch):
    # A prompt sent the moment serve says so is then not held up by the model's load.
    events = []

    def load():
        time.sleep(0.3)
        events.append("loaded")
        return True

    monkeypatch.setattr(_ReadyServer, "after_ready", staticmethod(lambda: events.append("ready")))
    out = _serve_with_a_model_load(monkeypatch, load)
    assert events == ["loaded", "ready"]
    assert "PowerContext serving on" in out


@pytest.mark.django_db
def test_serve_says_it_serves_after_a_bounded_wait_when_the_load_is_slow(monkeypatch):
    from server import background

    monkeypatch.setattr(background, "MODEL_WAIT_SECONDS", 0.2)
    release = threading.Event()
    events = []

    def load():
        release.wait(10)
        events.append("loaded")
        return True

    def after_ready():
        events.append("ready")
        release.set()  # the load ends only now: serve did not wait for it

    monkeypatch.setattr(_ReadyServer, "after_ready", staticmethod(after_ready))
    started = time.monotonic()
    out = _serve_with_a_model_load(monkeypatch, load)
    assert events == ["ready", "loaded"]
    assert time.monotonic() - started < 5
    assert "PowerContext serving on" in out


def test_server_stops_when_asked_and_waitress_log_lines_do_not_name_the_request(caplog):
    def app(environ, start_response):
        start_response("204 No Content", [])
        return []

    server = Server(app, host="127.0.0.1", port=0)
    server.request_stop()
    server.run(grace=1)  # returns at once: the stop was requested before it started
    assert _refuses_connections(server.port)

    # As waitress writes it: the path already formatted into the message.
    with caplog.at_level(logging.INFO, logger="waitress"):
        logging.getLogger("waitress").info(
            "Client disconnected while serving /v1/memory/search?token=secret"
        )
    assert "Client disconnected while serving a request" in caplog.text
    assert "secret" not in caplog.text


# -- the real process -----------------------------------------------------------------


def _env(tmp_path, **overrides):
    env = dict(os.environ)
    # Hermetic and as deployed: the production settings (not the suite's), SQLite in
    # the test's own data directory, no token unless asked.
    env["DJANGO_SETTINGS_MODULE"] = "server.settings"
    env.pop("POWERCONTEXT_DATABASE_URL", None)
    env.pop("POWERCONTEXT_API_TOKEN", None)
    env.pop("POWERCONTEXT_SECRET_KEY", None)
    env["POWERCONTEXT_HOME"] = str(tmp_path)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(overrides)
    return env


class _Process:
    """A child process whose stdout is read line by line in the background."""

    def __init__(self, args, env):
        self.popen = subprocess.Popen(
            args,
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr_text = ""
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        for line in self.popen.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _read_stderr(self):
        self.stderr_text = self.popen.stderr.read()

    def wait_for_line(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if line is None:
                break
            seen.append(line)
            match = pattern.match(line)
            if match:
                return match
        self.kill()
        pytest.fail(f"no line matching {pattern.pattern!r}; stdout: {seen}, stderr: {self.stderr}")

    @property
    def stderr(self):
        return self.stderr_text

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        self.popen.send_signal(sig)
        return self.popen.wait(timeout=timeout)

    def kill(self):
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


@pytest.fixture
def start_process():
    started = []

    def start(args, env):
        process = _Process(args, env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


def _serve(start_process, tmp_path, *extra, **env):
    process = start_process(
        [sys.executable, "manage.py", "serve", "--port", "0", *extra], _env(tmp_path, **env)
    )
    match = process.wait_for_line(READY, START_TIMEOUT)
    return process, match.group(1), match.group(3)


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers, response.read()


def _refuses_connections(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    except (ConnectionResetError, TimeoutError):
        # Caught the listening socket as it closed (reset, or a SYN dropped in that instant
        # whose retransmission comes after the 1 s timeout); the next attempt is refused.
        return False
    return False


@pytest.mark.slow
def test_serve_migrates_serves_admin_and_stops_on_sigterm(start_process, tmp_path):
    process, base_url, data = _serve(start_process, tmp_path)
    assert data == str(tmp_path.resolve())

    status, headers, body = _get(base_url + "admin/login/")
    assert status == 200
    assert b"csrfmiddlewaretoken" in body

    status, headers, body = _get(base_url + "static/admin/css/base.css")
    assert status == 200
    assert headers["Content-Type"].startswith("text/css")
    assert body

    status, headers, body = _get(base_url + "health/live")
    assert status == 200

    with sqlite3.connect(tmp_path / "powercontext.sqlite3") as db:
        applied = db.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
    assert applied > 0

    assert process.stop(signal.SIGTERM) == 0
    assert _refuses_connections(int(base_url.rsplit(":", 1)[1].rstrip("/")))


@pytest.mark.slow
def test_serve_stops_on_sigint(start_process, tmp_path):
    process, base_url, _ = _serve(start_process, tmp_path)
    assert _get(base_url + "admin/login/")[0] == 200
    assert process.stop(signal.SIGINT) == 0


@pytest.mark.slow
def test_serve_restart_on_a_migrated_database_starts_again(start_process, tmp_path):
    first, _, _ = _serve(start_process, tmp_path)
    assert first.stop() == 0
    second, base_url, _ = _serve(start_process, tmp_path)
    assert _get(base_url + "admin/login/")[0] == 200
    assert second.stop() == 0


@pytest.mark.slow
def test_serve_refuses_public_address_without_token_before_touching_data(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "serve", "--host", ALL_INTERFACES, "--port", "0"],
        cwd=REPO_ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT,
    )
    assert result.returncode != 0
    assert "Set POWERCONTEXT_API_TOKEN" in result.stderr
    assert "PowerContext serving" not in result.stdout
    assert not (tmp_path / "powercontext.sqlite3").exists()


# -- draining: the serving module with a WSGI app whose requests we control ----------

_SLOW_APP = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    from server.serving import Server

    release = Path(sys.argv[1])
    grace = float(sys.argv[2])
    BODY = b"x" * (8 * 1024 * 1024)  # more than a socket takes in one send

    def app(environ, start_response):
        if environ["PATH_INFO"] == "/slow":
            print("slow request started", flush=True)
            deadline = time.monotonic() + 30
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        start_response("200 OK", [("Content-Length", str(len(BODY)))])
        return [BODY]

    server = Server(app, host="127.0.0.1", port=0, threads=2)
    server.run(grace=grace, ready=lambda: print(f"ready {server.port}", flush=True))
    print("stopped", flush=True)
    """
)


def _start_slow_app(start_process, tmp_path, grace):
    release = tmp_path / "release"
    process = start_process(
        [sys.executable, "-c", _SLOW_APP, str(release), str(grace)], _env(tmp_path)
    )
    port = int(process.wait_for_line(re.compile(r"^ready (\d+)$"), START_TIMEOUT).group(1))
    return process, port, release


def _slow_request(port, results):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/slow")
        response = connection.getresponse()
        received = 0
        # A slow reader: most of the body is still queued in the server after the
        # application has returned, so only a running event loop can deliver it.
        while chunk := response.read(64 * 1024):
            received += len(chunk)
            time.sleep(0.005)
        results.put((response.status, received))
    except Exception as error:
        results.put(error)
    finally:
        connection.close()


@pytest.mark.slow
def test_sigterm_lets_a_request_in_flight_finish_and_refuses_new_ones(start_process, tmp_path):
    process, port, release = _start_slow_app(start_process, tmp_path, grace=30)
    results = queue.Queue()
    client = threading.Thread(target=_slow_request, args=(port, results))
    client.start()
    process.wait_for_line(re.compile("^slow request started$"), 10)

    process.popen.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while not _refuses_connections(port):
        assert time.monotonic() < deadline, "still accepting connections after SIGTERM"
        time.sleep(0.05)
    assert process.popen.poll() is None, "exited while a request was in flight"

    release.touch()
    client.join(timeout=STOP_TIMEOUT)
    assert results.get_nowait() == (200, 8 * 1024 * 1024)
    assert process.popen.wait(timeout=STOP_TIMEOUT) == 0
    process.wait_for_line(re.compile("^stopped$"), 1)


@pytest.mark.slow
def test_shutdown_waits_no_longer_than_the_grace_period(start_process, tmp_path):
    process, port, _ = _start_slow_app(start_process, tmp_path, grace=0.5)
    threading.Thread(target=_slow_request, args=(port, queue.Queue()), daemon=True).start()
    process.wait_for_line(re.compile("^slow request started$"), 10)

    started = time.monotonic()
    assert process.stop(signal.SIGTERM, timeout=STOP_TIMEOUT) == 0
    assert time.monotonic() - started < 5


@pytest.mark.slow
def test_a_second_signal_stops_without_waiting_for_the_grace_period(start_process, tmp_path):
    process, port, _ = _start_slow_app(start_process, tmp_path, grace=60)
    threading.Thread(target=_slow_request, args=(port, queue.Queue()), daemon=True).start()
    process.wait_for_line(re.compile("^slow request started$"), 10)

    process.popen.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    started = time.monotonic()
    assert process.stop(signal.SIGINT, timeout=STOP_TIMEOUT) == 0
    assert time.monotonic() - started < 5


# -- the data directory's files -------------------------------------------------------


@pytest.mark.slow
def test_a_served_database_and_its_key_are_readable_by_the_owner_only(start_process, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)  # as an older version left it
    process, base_url, _ = _serve(start_process, home)
    assert _get(base_url + "health/ready")[0] == 200

    # While serving: SQLite removes -wal and -shm when the last connection closes.
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("powercontext.sqlite3", "powercontext.sqlite3-wal", "powercontext.sqlite3-shm"):
        assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE((home / "secret_key").stat().st_mode) == 0o600

    assert process.stop() == 0
    deadline = time.monotonic() + 5
    while "now 0700" not in process.stderr and time.monotonic() < deadline:
        time.sleep(0.05)  # the stderr reader finishes after the pipe closes
    warning = f"Data directory {home.resolve()} was readable by other users (mode 0755); now 0700."
    assert warning in process.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check"], ["serve", "--port", "0"]])
def test_an_empty_key_file_is_refused_in_one_line_before_serving(tmp_path, command):
    (tmp_path / "secret_key").write_bytes(b"")  # a first start on a full disk
    result = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=REPO_ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT,
    )
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f"PowerContext cannot start: the secret key file {tmp_path.resolve() / 'secret_key'} "
        "is empty. Delete it to have a new key generated (this signs out admin sessions), "
        "or set POWERCONTEXT_SECRET_KEY to a key of at least 50 characters."
    ]
    assert "PowerContext serving" not in result.stdout


# -- slow clients and waitress's own errors -------------------------------------------

# More than waitress's default connection limit (100), which such clients used to fill.
TRICKLING_CLIENTS = 150


def _port_of(base_url):
    return int(base_url.rsplit(":", 1)[1].rstrip("/"))


class _Tricklers:
    """Connections that send a request one byte at a time and never finish it."""

    def __init__(self, port, count):
        self.sockets = []
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"POST /v1/memory/search HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            self.sockets.append(sock)
        self.answers = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def _trickle(self):
        while not self._stop.wait(0.5):
            for sock in self.sockets:
                if sock in self.answers:
                    continue
                try:
                    sock.send(b"a")
                except OSError:
                    self.answers[sock] = self._read(sock)

    def _read(self, sock):
        sock.settimeout(1)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except OSError:
            pass
        return received

    def wait_until_all_closed(self, timeout):
        deadline = time.monotonic() + timeout
        while len(self.answers) < len(self.sockets) and time.monotonic() < deadline:
            time.sleep(0.1)
        self._stop.set()
        self._thread.join()
        return len(self.sockets) - len(self.answers)

    def close(self):
        self._stop.set()
        for sock in self.sockets:
            sock.close()


@pytest.mark.slow
def test_trickling_clients_neither_starve_health_nor_outlast_the_request_timeout(
    start_process, tmp_path
):
    process, base_url, _ = _serve(start_process, tmp_path, "--request-timeout", "2")
    tricklers = _Tricklers(_port_of(base_url), TRICKLING_CLIENTS)
    try:
        started = time.monotonic()
        with urllib.request.urlopen(base_url + "health/live", timeout=1.5) as response:
            assert response.status == 200
        assert time.monotonic() - started < 1.5

        still_open = tricklers.wait_until_all_closed(timeout=6)
        assert still_open == 0
        for answer in tricklers.answers.values():
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408 "), answer[:200]
            assert json.loads(body)["error"]["code"] == "request_timeout"
    finally:
        tricklers.close()
    assert _get(base_url + "health/live")[0] == 200
    assert process.stop() == 0


@pytest.mark.slow
def test_a_full_server_accepts_again_once_trickling_clients_are_shed(start_process, tmp_path):
    process, base_url, _ = _serve(
        start_process, tmp_path, "--connection-limit", "20", "--request-timeout", "2"
    )
    tricklers = _Tricklers(_port_of(base_url), 30)  # 10 wait in the backlog
    try:
        started = time.monotonic()
        with urllib.request.urlopen(base_url + "health/live", timeout=8) as response:
            assert response.status == 200
        # At most two request timeouts (the held ones, then the backlog's) and a sweep.
        assert time.monotonic() - started < 6
    finally:
        tricklers.close()
    assert process.stop() == 0


def _raw_exchange(port, request):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass  # waitress closes after an error; the rest of a large request is unread
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    # Names lowercased: waitress writes them in its own capitalisation.
    headers = {name.lower(): value for name, value in (h.split(": ", 1) for h in header_lines)}
    return int(status_line.split()[1]), headers, body


@pytest.mark.slow
def test_errors_waitress_answers_itself_have_the_api_error_shape(start_process, tmp_path):
    _, base_url, _ = _serve(start_process, tmp_path)
    port = _port_of(base_url)
    host = b"Host: 127.0.0.1\r\n"
    cases = {
        400: b"GET /health/live HTTP/1.1\r\n" + host + b"Bad Header Line\r\n\r\n",
        # Over waitress's own cap (4 x the API's 4 MiB), refused before any body is read.
        413: b"POST /v1/memory/search HTTP/1.1\r\n"
        + host
        + b"Content-Type: application/json\r\nContent-Length: 17000000\r\n\r\n",
        431: b"GET /health/live HTTP/1.1\r\n" + host + b"X-Big: " + b"a" * 300_000 + b"\r\n\r\n",
        501: b"POST /v1/memory/search HTTP/1.1\r\n" + host + b"Transfer-Encoding: gzip\r\n\r\n",
    }
    codes = {}
    for status, request in cases.items():
        answered, headers, body = _raw_exchange(port, request)
        assert answered == status, body
        assert headers["content-type"] == "application/json"
        assert re.fullmatch(r"[0-9a-f]{32}", headers["x-powercontext-request-id"])
        error = json.loads(body)["error"]
        assert set(error) == {"code", "message", "details"}
        assert error["details"] is None
        assert "Bad Header" not in error["message"]  # the request is not quoted back
        codes[status] = error["code"]
    assert codes == {
        400: "bad_request",
        413: "payload_too_large",
        431: "headers_too_large",
        501: "not_implemented",
    }


@pytest.mark.parametrize("status", [400, 408, 413, 431, 500, 501])
def test_waitress_error_bodies_are_the_api_error_body(status):
    headers, body = error_response(status)
    error = json.loads(body)["error"]
    assert json.loads(body) == error_body(error["code"], error["message"])
    assert ("Content-Type", "application/json") in headers
