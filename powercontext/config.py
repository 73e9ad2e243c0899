"""Reading the deployment's environment into settings values.

Kept out of settings.py so the rules (where data lives, how a URL becomes a database,
how the secret key is kept) can be tested on their own.
"""

import os
import secrets
from pathlib import Path

import dj_database_url
import platformdirs

OCEANBASE_ENGINE = "powercontext.db.backends.oceanbase"


@dj_database_url.register("oceanbase", OCEANBASE_ENGINE)
def _oceanbase_options(parsed: dict) -> None:
    options = parsed.setdefault("OPTIONS", {})
    # utf8mb4 end to end: memories are arbitrary Unicode, emoji and NUL included.
    options.setdefault("charset", "utf8mb4")


def data_home() -> Path:
    """The data directory: POWERCONTEXT_HOME, else the per-user data directory."""
    configured = os.environ.get("POWERCONTEXT_HOME")
    home = Path(configured) if configured else Path(platformdirs.user_data_dir("powercontext"))
    home = home.expanduser().resolve()
    # "static" too: WhiteNoise expects STATIC_ROOT to exist even when serving from finders.
    (home / "static").mkdir(parents=True, exist_ok=True)
    return home


def secret_key(home: Path) -> str:
    """POWERCONTEXT_SECRET_KEY, else a key generated once and kept (0600) in ``home``."""
    configured = os.environ.get("POWERCONTEXT_SECRET_KEY")
    if configured:
        return configured
    path = home / "secret_key"
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    key = secrets.token_urlsafe(50)
    # O_EXCL: two processes starting at once must agree on one key, not overwrite.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key)
    return key


def database_config(home: Path) -> dict:
    """The default database: POWERCONTEXT_DATABASE_URL, else SQLite in ``home``."""
    url = os.environ.get("POWERCONTEXT_DATABASE_URL")
    if url:
        config = dj_database_url.parse(url)
    else:
        config = {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(home / "powercontext.sqlite3"),
        }
    if config["ENGINE"] == "django.db.backends.sqlite3":
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
