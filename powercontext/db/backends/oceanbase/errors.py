"""Server error codes OceanBase raises where callers may want to react.

They arrive as ``exc.args[0]`` of the MySQLdb error, wrapped by Django in the matching
``django.db`` exception (``exc.__cause__`` holds the driver's).
"""

DUPLICATE_KEY = 1062  # IntegrityError: unique/primary key violated
# OperationalError: a lock was not granted in time. Also what NOWAIT and
# ``FOR UPDATE WAIT n`` raise. The wait is bounded by ob_query_timeout (10 s by default),
# not by innodb_lock_wait_timeout.
LOCK_WAIT_TIMEOUT = 1205
FULLTEXT_INDEX_MISSING = 1191  # OperationalError: MATCH without a matching FULLTEXT index
