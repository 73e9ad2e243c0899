"""Settings for the test suite: the real settings, on a throwaway data directory.

pytest-django reads settings before any conftest runs, so what must be decided before
Django starts (where data lives, which database the suite targets) is decided here.
``POWERCONTEXT_TEST_DATABASE=oceanbase`` runs the suite on OceanBase: an external one
given by ``POWERCONTEXT_TEST_OCEANBASE_URL``, else an embedded seekdb started for the
session.
"""

import os
import tempfile

os.environ.setdefault("POWERCONTEXT_HOME", tempfile.mkdtemp(prefix="powercontext-test-"))

if os.environ.get("POWERCONTEXT_TEST_DATABASE") == "oceanbase":
    from tests.oceanbase.session import oceanbase_url

    os.environ["POWERCONTEXT_DATABASE_URL"] = oceanbase_url()

from server.config import SQLITE_ENGINE
from server.settings import *  # noqa: F403

if DATABASES["default"]["ENGINE"] == SQLITE_ENGINE:  # noqa: F405
    # A file, not Django's default in-memory test database: concurrency tests need
    # several connections (threads, processes) to share one database, as in production.
    DATABASES["default"]["TEST"]["NAME"] = str(POWERCONTEXT_HOME / "test.sqlite3")  # noqa: F405

# Django's test client addresses requests to "testserver"; only the suite serves that name.
POWERCONTEXT_ALLOWED_HOSTS = [*POWERCONTEXT_ALLOWED_HOSTS, "testserver"]  # noqa: F405
