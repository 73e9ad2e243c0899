"""A database PowerContext cannot use, said in one or two lines: the setting, its value
(password masked) and the document to read, never a traceback.

``server/config.py`` refuses a URL it cannot serve on when the settings are read;
``manage.py`` turns what fails when a command first connects (a wrong host, port, user,
password or database name, a missing driver, a server that is not OceanBase) into one
message through :func:`explain`. Any other error keeps its traceback: it is a bug to
report, not a setting to fix.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

SETTING = "POWERCONTEXT_DATABASE_URL"
OCEANBASE_DOC = "docs/oceanbase.md"
CONFIGURATION_DOC = 'README.md, "Configuration"'
# The schemes PowerContext serves on (server/config.py registers both).
SCHEMES = ("sqlite", "oceanbase")

# mysqlclient's codes for a connection that could not be made or was refused
# (client errors 2xxx, server errors 1xxx): a setting to fix, not a bug.
_CONNECTION_CODES = {
    1044: "access to the database denied",
    1045: "access denied (user or password)",
    1049: "no such database (create it: docs/oceanbase.md §2)",
    2002: "cannot connect",
    2003: "cannot connect",
    2005: "unknown host",
    2013: "the connection was lost while connecting",
}


class DatabaseUrlRefused(Exception):
    """POWERCONTEXT_DATABASE_URL names a database PowerContext does not serve on."""


def masked(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "(a URL that cannot be parsed)"
    if not password:
        return url
    netloc = parts.netloc
    at = netloc.rfind("@")
    user = netloc[:at].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***{netloc[at:]}"))


def check_scheme(url: str) -> None:
    """Raise DatabaseUrlRefused unless ``url``'s scheme is one PowerContext serves on."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in SCHEMES:
        return
    if scheme.startswith("mysql"):
        hint = (
            "OceanBase is reached with an oceanbase:// URL; plain MySQL and MariaDB are "
            f"not supported ({OCEANBASE_DOC} §3)"
        )
    else:
        hint = (
            "PowerContext serves on SQLite (sqlite:///path, or no URL at all) or OceanBase "
            f"(oceanbase://...; {OCEANBASE_DOC})"
        )
    raise DatabaseUrlRefused(f"{SETTING}={masked(url)} is not supported: {hint}.")


def explain(error: BaseException) -> str | None:
    """One or two lines for an error that a database setting explains; None otherwise."""
    from django.core.exceptions import ImproperlyConfigured
    from django.db import utils

    url = os.environ.get(SETTING, "")
    where = f"{SETTING}={masked(url)}" if url else f"the SQLite database ({SETTING} unset)"
    doc = OCEANBASE_DOC if url.lower().startswith("oceanbase") else CONFIGURATION_DOC
    if isinstance(error, ImproperlyConfigured):
        text = str(error)
        if "MySQLdb" in text:
            return (
                f"{where} needs the OceanBase driver, mysqlclient: "
                f"pip install -r requirements-oceanbase.txt ({OCEANBASE_DOC} §1)."
            )
        if "is not OceanBase" in text:
            return f"{where}: {text} ({OCEANBASE_DOC})."
        return None
    if not isinstance(error, utils.OperationalError | utils.InterfaceError):
        return None
    cause = error.__cause__ or error
    code = cause.args[0] if cause.args and isinstance(cause.args[0], int) else None
    detail = str(cause.args[1]) if code is not None and len(cause.args) > 1 else str(cause)
    if code in _CONNECTION_CODES:
        return (
            f"Cannot use the database at {where}: {_CONNECTION_CODES[code]} ({detail}).\n"
            f"Check the host, port, user, password and database name it gives ({doc})."
        )
    if "unable to open database file" in detail:
        return (
            f"Cannot open {where}: {detail}. Check that its directory exists and is "
            f"writable ({doc})."
        )
    return None
