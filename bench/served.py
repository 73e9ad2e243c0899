"""Real PowerContext server processes for the benchmarks (bench/*.py): a data store
(SQLite in a data directory, or a fresh database on OceanBase), ``manage.py serve`` on
loopback, its resident memory, a small HTTP client, and what the benchmarks share besides
(percentile, the committed prompts and queries, the raw FTS5 statement, the table).

Standard library only in this process: whatever needs Django (migrating, seeding through
the services, wiping the derived state) runs as ``bench/django_tasks.py`` in a child
process with the same environment as the server, so one driver can run SQLite and then
OceanBase without Django's settings being fixed at the first import.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import json
import math
import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

REPO_ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"PowerContext serving on http://(127\.0\.0\.1):(\d+)/ ")
START_TIMEOUT = 180
TASKS = REPO_ROOT / "bench" / "django_tasks.py"
PROMPTS = REPO_ROOT / "bench" / "prompts" / "prepare_prompts.json"
QUERIES = REPO_ROOT / "bench" / "queries" / "search_queries.txt"
# The statement SqliteSearchEngine.match issues for Memory's index, with sqlite3's "?" placeholders:
# what a served search or prepare is measured against.
RAW_MATCH_SQL = (
    "SELECT e.entry_id, e.entry_version_id, bm25(memory_activeentry_fts, 0.0, 1.0) AS rank "
    "FROM memory_activeentry_fts JOIN memory_memoryactiveentry e "
    "ON e.id = memory_activeentry_fts.rowid "
    "WHERE memory_activeentry_fts MATCH ? ORDER BY rank, e.entry_id LIMIT ?"
)
PR_SET_PDEATHSIG = 1

try:  # looked up once here: a preexec_fn must not dlopen between fork and exec
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _PRCTL = None


def die_with_parent() -> None:
    """A ``preexec_fn``: the child gets SIGTERM when the thread that started it dies, even
    by SIGKILL (Linux; a no-op elsewhere), so no server outlives a killed benchmark."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def stop(process: subprocess.Popen, timeout: float = 60.0) -> None:
    """SIGTERM ``process`` (a server drains), SIGKILL when it takes longer than ``timeout``."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


PACK_BEGIN = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1"
PACK_END = "END_POWERCONTEXT_PREPARED_CONTEXT_V1"


def pack_memory_citations(content: str | None) -> list[dict[str, Any]]:
    """The Memory citations of a pack's items, in pack order (none for an empty pack)."""
    if not content:
        return []
    lines = content.split("\n")
    start, end = lines.index(PACK_BEGIN), lines.index(PACK_END)
    document = json.loads("\n".join(lines[start + 1 : end]))
    return [item["citation"] for item in document["items"] if "entry_id" in item["citation"]]


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0..1) of ``values``: the smallest value with at
    least that share of them at or below it; 0.0 when empty."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = min(len(ordered), max(1, math.ceil(share * len(ordered))))
    return float(ordered[rank - 1])


def load_queries(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def load_prompts(path: Path) -> list[str]:
    return list(json.loads(path.read_text(encoding="utf-8"))["prompts"])


# -- where the data lives --------------------------------------------------------------


@dataclass
class Store:
    """One deployment's data: SQLite in ``home`` or a database of its own on OceanBase.

    ``url`` is POWERCONTEXT_DATABASE_URL for OceanBase, None for SQLite (the server then
    uses ``home/powercontext.sqlite3``).
    """

    engine: str
    home: Path
    url: str | None = None
    seekdb: object | None = None  # tests.oceanbase.seekdb.TestOceanBase we started
    created_database: str | None = None
    server_url: str | None = None  # the OceanBase server's URL (any database)
    seekdb_pid: int | None = None
    # Set last in env(): e.g. PYTHONHASHSEED for reproducible server processes.
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in (
            "POWERCONTEXT_DATABASE_URL",
            "POWERCONTEXT_API_TOKEN",
            "POWERCONTEXT_TEST_DATABASE",
            "POWERCONTEXT_DEBUG",  # keeps every query in memory: not what is measured
            "DJANGO_SETTINGS_MODULE",
        ):
            env.pop(name, None)
        env.update(
            POWERCONTEXT_HOME=str(self.home),
            DJANGO_SETTINGS_MODULE="server.settings",
            PYTHONUNBUFFERED="1",
        )
        if self.url:
            env["POWERCONTEXT_DATABASE_URL"] = self.url
        env.update(self.extra_env)
        return env

    def close(self, *, drop: bool) -> None:
        """Drop the database we created on an external OceanBase (when ``drop``) and stop
        the seekdb we started."""
        if drop and self.created_database and self.seekdb is None and self.server_url:
            with contextlib.suppress(Exception):
                _oceanbase_execute(
                    self.server_url, f"DROP DATABASE IF EXISTS `{self.created_database}`"
                )
        if self.seekdb is not None:
            self.seekdb.stop()  # type: ignore[attr-defined]
            self.seekdb = None


def open_store(engine: str, home: Path, *, oceanbase_url: str | None = None) -> Store:
    """A fresh store in ``home`` (created; must not hold a database yet).

    OceanBase: on the server at ``oceanbase_url`` (any database name in it) if given, else
    on an embedded seekdb started here with its data under ``home/seekdb``; either way in
    a new database ``pc_bench_<hex>``, created utf8mb4/utf8mb4_bin as the project needs.
    """
    home.mkdir(parents=True, exist_ok=True)
    if (home / "powercontext.sqlite3").exists():
        raise SystemExit(f"{home} already holds a database: give a fresh directory")
    if engine == "sqlite":
        return Store("sqlite", home.resolve())
    if engine != "oceanbase":
        raise ValueError(engine)
    seekdb = None
    if oceanbase_url is None:
        sys.path.insert(0, str(REPO_ROOT))
        from tests.oceanbase.seekdb import start_seekdb

        seekdb = start_seekdb(base_dir=home / "seekdb")
        oceanbase_url = seekdb.url
    name = "pc_bench_" + secrets.token_hex(6)
    _oceanbase_execute(
        oceanbase_url,
        f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    )
    parts = urlsplit(oceanbase_url)
    url = urlunsplit(parts._replace(path="/" + name))
    store = Store(
        "oceanbase",
        home.resolve(),
        url=url,
        seekdb=seekdb,
        created_database=name,
        server_url=oceanbase_url,
        seekdb_pid=seekdb.process.pid if seekdb is not None else None,
    )
    return store


def _oceanbase_execute(url: str, statement: str) -> None:
    """One statement on the OceanBase server of ``url``, outside any database."""
    import MySQLdb  # the OceanBase driver; only needed for this engine

    parts = urlsplit(url)
    options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    kwargs: dict[str, object] = {"user": unquote(parts.username or "root"), "charset": "utf8mb4"}
    if parts.password:
        kwargs["password"] = unquote(parts.password)
    if "unix_socket" in options:
        kwargs["unix_socket"] = options["unix_socket"]
    else:
        kwargs["host"] = parts.hostname or "127.0.0.1"
        kwargs["port"] = parts.port or 2881
    connection = MySQLdb.connect(**kwargs)
    try:
        connection.cursor().execute(statement)
        connection.commit()
    finally:
        connection.close()


# -- child processes -------------------------------------------------------------------


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_kib: int
    # User plus system CPU time of the child: on a shared machine, what the work cost.
    cpu_seconds: float = 0.0


def run(store: Store, args: list[str], *, timeout: float = 900) -> Completed:
    """Run ``python <args>`` from the repository root with the store's environment; its
    output, wall time and peak RSS (the child's own, from wait4)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            [sys.executable, *args], cwd=REPO_ROOT, env=store.env(), stdout=out, stderr=err
        )
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return Completed(
            process.returncode,
            out.read(),
            err.read(),
            seconds,
            usage.ru_maxrss,
            usage.ru_utime + usage.ru_stime,
        )


def patient(store: Store) -> Store:
    """``store`` with OceanBase's statement timeout raised to 10 minutes, as
    docs/oceanbase.md says to for a large ``rebuild_index`` (its default, 10 s, cut the
    wipe and the rebuild of 100,000 entries' projection on a loaded machine), for a
    bench's own set-up steps, which nothing measures (a seeding's COMMIT once waited out
    the 10 s on the test suite's embedded seekdb). SQLite: ``store`` itself."""
    if store.url is None:
        return store
    joiner = "&" if "?" in store.url else "?"
    timeout = "init_command=SET%20ob_query_timeout%3D600000000"
    return replace(store, url=f"{store.url}{joiner}{timeout}", seekdb=None)


def manage(store: Store, *args: str, timeout: float = 900) -> Completed:
    return run(store, ["manage.py", *args], timeout=timeout)


def django_task(store: Store, *args: str, timeout: float = 3600) -> dict:
    """Run one ``bench/django_tasks.py`` task; its JSON answer (last stdout line)."""
    done = run(store, [str(TASKS), *args], timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"django_tasks {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def memory_of(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak resident set) of ``pid`` in KiB, from /proc; {} if gone."""
    values: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                name, _, rest = line.partition(":")
                if name in ("VmRSS", "VmHWM"):
                    values[name] = int(rest.split()[0])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return {}
    return values


def descendants(pid: int) -> list[int]:
    """``pid``'s child processes, recursively (from /proc/<pid>/task/*/children)."""
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):
                children = [int(c) for c in (task / "children").read_text().split()]
                found.extend(children)
                pending.extend(children)
    return found


def cpu_seconds(pid: int) -> float:
    """User and system CPU time ``pid`` has used so far (its threads included), from
    /proc/<pid>/stat: what a request costs the server, whatever else the machine runs."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_idle(pid: int, *, most: float = 60.0) -> None:
    """Until ``pid`` used under 20 ms of CPU in half a second (a started server loads its
    embedding model in the background), ``most`` seconds at most."""
    deadline = time.monotonic() + most
    before = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = cpu_seconds(pid)
        if now - before < 0.02:
            return
        before = now


class MemorySampler:
    """Samples a process's resident memory every ``interval`` seconds on a thread.

    ``peak_kib`` is the larger of the highest VmRSS seen and the kernel's VmHWM at the
    last sample, so a spike between two samples is not missed.
    """

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid, self.interval = pid, interval
        self.peak_kib = 0
        self.first_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        values = memory_of(self.pid)
        if values:
            self.first_kib = self.first_kib or values.get("VmRSS", 0)
            self.peak_kib = max(self.peak_kib, values.get("VmRSS", 0), values.get("VmHWM", 0))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> MemorySampler:
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> int:
        self.sample()
        self._stop.set()
        self._thread.join()
        return self.peak_kib


# -- the server ------------------------------------------------------------------------


@dataclass
class ServerProcess:
    """``manage.py serve`` on 127.0.0.1 (port 0) for ``store``; stderr goes to a log in the
    store's home (``log_name`` None: discarded). It dies with this process (SIGTERM, see
    die_with_parent). As a context manager: started on entry, stopped on exit."""

    store: Store
    threads: int = 4
    log_name: str | None = "server.log"
    serve_args: tuple[str, ...] = ()  # more ``manage.py serve`` options
    host: str = ""
    port: int = 0
    process: subprocess.Popen | None = None
    _lines: queue.Queue = field(default_factory=queue.Queue)

    def start(self) -> ServerProcess:
        log = (
            open(self.store.home / self.log_name, "a")  # the child keeps its own copy
            if self.log_name
            else open(os.devnull, "w")
        )
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--threads",
                    str(self.threads),
                    *self.serve_args,
                ],
                cwd=REPO_ROOT,
                env=self.store.env(),
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                preexec_fn=die_with_parent,
            )
        finally:
            log.close()
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.05))
            except queue.Empty:
                self.kill()
                raise RuntimeError(f"serve did not start in {START_TIMEOUT}s") from None
            if line is None:
                see = f"; see {self.store.home / self.log_name}" if self.log_name else ""
                raise RuntimeError(f"serve exited before it was ready{see}")
            match = READY.search(line)
            if match:
                self.host, self.port = match.group(1), int(match.group(2))
                return self

    def _read(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client(self, timeout: float = 30.0, *, retry_stale: bool = False) -> Client:
        return Client(self.host, self.port, timeout=timeout, retry_stale=retry_stale)

    def kill(self) -> None:
        """SIGKILL: no drain, no atexit, no connection close."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM (graceful drain), SIGKILL if it takes longer than ``timeout``."""
        if self.process is None:
            return None
        stop(self.process, timeout)
        return self.process.returncode

    def __enter__(self) -> ServerProcess:
        return self if self.process is not None else self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class Unanswered(Exception):
    """No HTTP answer: refused, reset, closed or timed out. The request may or may not
    have been applied."""


class Client:
    """A keep-alive JSON client for one server; reconnects after a failure.

    With ``retry_stale``, a request that fails the way one does on a kept-alive connection
    the server has closed (reset, closed, no status line) is sent once more on a new
    connection, timed from scratch: the reconnect is not the server's cost. Without it, and
    for a timeout either way, the failure is Unanswered (the request may have been applied).
    ``token`` is sent as ``Authorization: Bearer`` (a server with an agent token, or a
    reviewer's personal token).
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float = 30.0,
        retry_stale: bool = False,
        token: str | None = None,
    ) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.retry_stale = retry_stale
        self.headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        if token:
            self.headers["Authorization"] = "Bearer " + token
        self._connection: http.client.HTTPConnection | None = None

    @classmethod
    def for_url(cls, url: str, **options: Any) -> Client:
        """A client for a server given by its base URL (``http://host:port``)."""
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"not an http://host:port URL: {url!r}")
        return cls(parts.hostname, parts.port or 80, **options)

    def post(self, path: str, body: dict) -> tuple[int, dict | None, float]:
        """(status, decoded JSON body or None, seconds of the round trip). Raises Unanswered."""
        data = json.dumps(body).encode()
        try:
            return self._post(path, data)
        except Unanswered as error:
            stale = isinstance(error.__cause__, ConnectionError | http.client.HTTPException)
            if not (self.retry_stale and stale):
                raise
        return self._post(path, data)

    def _post(self, path: str, data: bytes) -> tuple[int, dict | None, float]:
        started = time.perf_counter()
        try:
            if self._connection is None:
                self._connection = http.client.HTTPConnection(
                    self.host, self.port, timeout=self.timeout
                )
            self._connection.request("POST", path, data, self.headers)
            response = self._connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.close()
            raise Unanswered(f"{type(error).__name__}: {error}") from error
        elapsed = time.perf_counter() - started
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        try:
            decoded = json.loads(payload) if payload else None
        except ValueError:
            decoded = None
        return response.status, decoded, elapsed

    def timed(self, path: str, body: dict, *, status: int = 200) -> tuple[dict, float]:
        """(decoded JSON body, seconds of the round trip); RuntimeError for another status
        or no JSON body. Raises Unanswered."""
        answered, decoded, seconds = self.post(path, body)
        if answered != status or decoded is None:
            raise RuntimeError(f"{path} answered {answered}: {decoded!r}")
        return decoded, seconds

    def ok(self, path: str, body: dict, *, status: int = 200) -> dict:
        return self.timed(path, body, status=status)[0]

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def all_entries(client: Client, scope_id: str, *, include_inactive: bool = True) -> list[dict]:
    """Every entry of ``scope_id`` at one head, through /v1/memory/entries/list paging."""
    entries: list[dict] = []
    body: dict = {"scope_id": scope_id, "include_inactive": include_inactive, "limit": 1000}
    while True:
        page = client.ok("/v1/memory/entries/list", body)
        entries.extend(page["entries"])
        if not page["next_cursor"]:
            return entries
        body = {**body, "cursor": page["next_cursor"]}


def all_revisions(client: Client, scope_id: str) -> dict[int, list[dict]]:
    """{revision: changes} of ``scope_id``'s Memory, through /v1/memory/changes paging."""
    revisions: dict[int, list[dict]] = {}
    since = 0
    while True:
        page = client.ok(
            "/v1/memory/changes", {"scope_id": scope_id, "since_revision": since, "limit": 1000}
        )
        for item in page["revisions"]:
            revisions[item["memory_ref"]["revision"]] = item["changes"]
        if page["next_since"] is None:
            return revisions
        since = page["next_since"]


def report_runs(
    configs: list, run: Callable[[Any], dict], render: Callable[[dict], str], json_path: Path | None
) -> int:
    """Run each configuration and print its report as it finishes; every result as JSON to
    ``json_path`` if given. The exit status: 0 when every result passed, else 1."""
    results = []
    for config in configs:
        result = run(config)
        results.append(result)
        print(render(result), flush=True)
        print(flush=True)
    if json_path:
        json_path.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0 if all(result["passed"] for result in results) else 1


def markdown_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        padded = (cell.ljust(width) for cell, width in zip(cells, widths, strict=True))
        return "| " + " | ".join(padded) + " |"

    separator = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    return "\n".join([line(header), separator, *(line(row) for row in rows)])
