"""The test session's OceanBase, for ``server/settings_test.py``.

Settings call ``oceanbase_url()`` while being imported, before Django starts. The first
call starts the server (see ``tests.oceanbase.seekdb.start_test_oceanbase``: the URL in
POWERCONTEXT_TEST_OCEANBASE_URL, else embedded seekdb in a temporary directory); later
calls in the same process return the same URL. The server is stopped when the process
exits; if it is killed instead, the holder notices its parent's death and stops seekdb.
"""

from __future__ import annotations

import atexit

from tests.oceanbase.seekdb import TestOceanBase, start_test_oceanbase

_server: TestOceanBase | None = None


def oceanbase_url() -> str:
    """An ``oceanbase://`` URL for this test process, starting seekdb on first use."""
    global _server
    if _server is None:
        _server = start_test_oceanbase()
        atexit.register(_server.stop)
    return _server.url
