"""The id a captured prompt is stored under, keyed so that it confirms no guess.

The hook names each capture ``prompt:`` + sha256 over scope, session, turn and the
prompt as typed (``hooks/powercontext_hook.py``), secrets and ``<private>`` spans
included, and the stored metadata keeps the session and turn ids. Stored as sent, that
id is an offline oracle: put a guess in place of ``[redacted:password]`` (or of a
purged prompt), hash, compare. So an id of the hook's form is stored as an HMAC of it
under a per-install key (derived from Django's ``SECRET_KEY``, generated at install and
kept in the data directory, or ``POWERCONTEXT_SECRET_KEY``): the same id sent twice is
the same stored id (captures stay idempotent), and without the key nothing stored or
exported confirms a guess. Callers keep using the id they sent (the capture's answer
echoes it; Experience cites it); every lookup keys it the same way. Servers sharing one
database must share ``POWERCONTEXT_SECRET_KEY``, as they must for admin sessions.
"""

import re

from django.utils.crypto import salted_hmac

# The hook's form: "prompt:" and 64 lower-case hex digits.
_DIGEST_ID = re.compile(r"prompt:[0-9a-f]{64}")
_KEY_SALT = "powercontext.capture-id.v1"
KEYED_PREFIX = "prompt-hmac:"


def stored_source_id(source_id: str) -> str:
    """The id ``source_id`` is stored and looked up under: keyed if it is a digest of
    the prompt (the hook's form), else as sent (a caller-chosen name)."""
    if _DIGEST_ID.fullmatch(source_id) is None:
        return source_id
    return KEYED_PREFIX + salted_hmac(_KEY_SALT, source_id, algorithm="sha256").hexdigest()
