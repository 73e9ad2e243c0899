"""Reading the deployment's environment into settings values.

Kept out of settings.py so the rules (where data lives, how a URL becomes a database,
how the secret key is kept) can be tested on their own.
"""

import contextlib
import errno
import logging
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Any

import dj_database_url
import platformdirs
from dj_database_url import DBConfig

OCEANBASE_ENGINE = "powercontext.db.backends.oceanbase"
# Django's SQLite backend on sqlean's SQLite, with sqlite-vec loaded (the vector channel).
SQLITE_ENGINE = "powercontext.db.backends.sqlite"

logger = logging.getLogger("powercontext.config")

# The data directory holds every memory and the key that signs admin sessions: only the
# owner may read it. The files in it are kept 0600 as well, in case the directory is
# opened up again or a file is copied elsewhere with its mode.
PRIVATE_DIRECTORY_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

# secrets.token_urlsafe(50) is 67 characters; Django itself warns below 50. A shorter
# key file was cut off (a full disk, a copy gone wrong) or written by hand.
SECRET_KEY_MIN_CHARS = 50


@dj_database_url.register("sqlite", SQLITE_ENGINE)
def _sqlite_options(parsed: DBConfig) -> None:
    # As dj-database-url's own sqlite scheme: no path is an in-memory database.
    if not parsed.get("NAME"):
        parsed["NAME"] = ":memory:"


@dj_database_url.register("oceanbase", OCEANBASE_ENGINE)
def _oceanbase_options(parsed: DBConfig) -> None:
    options: dict[str, Any] = parsed.setdefault("OPTIONS", {})
    # utf8mb4 end to end: memories are arbitrary Unicode, emoji and NUL included.
    options.setdefault("charset", "utf8mb4")


def data_home() -> Path:
    """The data directory: POWERCONTEXT_HOME, else the per-user data directory.

    Created 0700; an existing directory that group or others may enter is tightened to
    0700, with a warning.
    """
    configured = os.environ.get("POWERCONTEXT_HOME")
    home = Path(configured) if configured else Path(platformdirs.user_data_dir("powercontext"))
    home = home.expanduser().resolve()
    home.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    mode = stat.S_IMODE(home.stat().st_mode)
    if mode & 0o077:
        home.chmod(PRIVATE_DIRECTORY_MODE)
        logger.warning(
            "Data directory %s was readable by other users (mode %04o); now %04o.",
            home,
            mode,
            PRIVATE_DIRECTORY_MODE,
        )
    # "static" too: WhiteNoise expects STATIC_ROOT to exist even when serving from finders.
    (home / "static").mkdir(mode=PRIVATE_DIRECTORY_MODE, exist_ok=True)
    return home


class SecretKeyUnusable(Exception):
    """The secret key file exists but holds no usable key."""


def secret_key(home: Path) -> str:
    """POWERCONTEXT_SECRET_KEY, else a key generated once and kept (0600) in ``home``.

    A key file that is empty or too short stops the process with one line saying what
    to do (``SystemExit``, so no traceback): serving with it would answer 500 to every
    request, or sign sessions with a guessable key.
    """
    configured = os.environ.get("POWERCONTEXT_SECRET_KEY")
    if configured:
        return configured
    try:
        return load_secret_key(home / "secret_key")
    except SecretKeyUnusable as error:
        raise SystemExit(f"PowerContext cannot start: {error}") from None


def load_secret_key(path: Path) -> str:
    """The key kept at ``path``, generated and written atomically on first use.

    Raises ``SecretKeyUnusable`` for a key file that is empty or too short.
    """
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    key = secrets.token_urlsafe(50)
    _write_new_file_atomically(path, key.encode("ascii"))
    # Two processes starting at once: the first rename wins and both use its key.
    return _read_key(path)


def _read_key(path: Path) -> str:
    key = path.read_text(encoding="ascii", errors="replace").strip()
    if len(key) < SECRET_KEY_MIN_CHARS:
        what = "is empty" if not key else f"holds only {len(key)} characters"
        raise SecretKeyUnusable(
            f"the secret key file {path} {what}. Delete it to have a new key generated "
            "(this signs out admin sessions), or set POWERCONTEXT_SECRET_KEY to a key "
            f"of at least {SECRET_KEY_MIN_CHARS} characters."
        )
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        path.chmod(PRIVATE_FILE_MODE)
    return key


def _write_new_file_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (0600) so that ``path`` is either absent or complete.

    A temporary file in the same directory, fsynced, then linked into place: a failure
    (a full disk) leaves no file behind, and an existing file is never replaced, so two
    processes starting at once agree on one key.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        try:
            os.fchmod(fd, PRIVATE_FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, path)
        except FileExistsError:
            return
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                raise
            # A file system without hard links: a rename is still atomic, but would
            # replace a key another process wrote in the meantime.
            os.rename(temporary, path)
        _fsync_directory(path.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def protect_sqlite_files(name: str, *, create: bool = False) -> None:
    """Tighten the SQLite database ``name`` and its WAL and shared-memory files to 0600
    if they are more open; with ``create``, first create a missing database 0600.

    SQLite creates a new database 0644 (less the umask) and gives ``-wal`` and ``-shm``
    the database file's mode, so a database created here keeps all three private.
    """
    if name == ":memory:" or name.startswith("file:"):
        return
    path = Path(name)
    if create:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
        except FileExistsError:
            pass
        except FileNotFoundError:
            return  # no such directory: SQLite's own error says so when it connects
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            if stat.S_IMODE(file.stat().st_mode) & 0o077:
                file.chmod(PRIVATE_FILE_MODE)
        except FileNotFoundError:
            pass


def database_config(home: Path, url: str | None = None) -> DBConfig:
    """The default database: ``url`` (``serve --engine seekdb`` gives its own), else
    POWERCONTEXT_DATABASE_URL, else SQLite in ``home``."""
    url = url or os.environ.get("POWERCONTEXT_DATABASE_URL")
    if url:
        config: DBConfig = _parse_database_url(url)
    else:
        config = {
            "ENGINE": SQLITE_ENGINE,
            "NAME": str(home / "powercontext.sqlite3"),
        }
    if config["ENGINE"] == SQLITE_ENGINE:
        # Existing files only: reading the settings creates no database
        # (``manage.py serve`` creates it, once it knows it will serve).
        protect_sqlite_files(str(config["NAME"]))
        options = config.setdefault("OPTIONS", {})
        # WAL lets readers keep a snapshot while a writer commits; IMMEDIATE makes a
        # write transaction take the write lock up front, so two writers queue on the
        # busy timeout instead of one failing on lock upgrade.
        options.setdefault("init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
        options.setdefault("transaction_mode", "IMMEDIATE")
        options.setdefault("timeout", 30)
    # Keep a connection per server thread instead of opening one per request (an
    # OceanBase connect costs milliseconds); health checks drop a connection that died.
    config["CONN_MAX_AGE"] = 300
    config["CONN_HEALTH_CHECKS"] = True
    config.setdefault("TEST", {})
    return config


def _parse_database_url(url: str) -> DBConfig:
    """``url`` as Django's database settings; a URL PowerContext cannot serve on stops the
    process with one line saying why (``SystemExit``: no traceback)."""
    from server.database_errors import DatabaseUrlRefused, check_scheme, masked

    try:
        check_scheme(url)
        return dj_database_url.parse(url)
    except DatabaseUrlRefused as refused:
        raise SystemExit(f"PowerContext cannot start: {refused}") from None
    except ValueError as error:
        raise SystemExit(
            f"PowerContext cannot start: POWERCONTEXT_DATABASE_URL={masked(url)} cannot be "
            f"read ({error}); docs/oceanbase.md §3 shows its form."
        ) from None


def source_retention_days(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> int:
    """``POWERCONTEXT_SOURCE_RETENTION_DAYS``: how many days a captured prompt keeps its
    content before ``serve`` purges it (``powercontext.retention``); 0 or unset keeps
    it for ever. Anything but a whole number of days from 0 up is a start-up error."""
    raw = environ.get("POWERCONTEXT_SOURCE_RETENTION_DAYS", "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) > 100_000:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            "POWERCONTEXT_SOURCE_RETENTION_DAYS must be a whole number of days "
            f"(0 keeps captured prompts for ever), not {raw!r}."
        )
    return int(raw)
