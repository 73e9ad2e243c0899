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
echoes it), and every lookup keys it the same way; what cites it (an Experience
proposal's ``source_refs``) stores the keyed id. Servers sharing one database must share
``POWERCONTEXT_SECRET_KEY``, as they must for admin sessions. Ids an earlier release
stored as sent are re-keyed by ``redact_secrets`` (``powercontext.legacy_capture_ids``).
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.crypto import salted_hmac

# The hook's form: "prompt:" and 64 lower-case hex digits.
_DIGEST_ID = re.compile(r"prompt:[0-9a-f]{64}")
_KEY_SALT = "powercontext.capture-id.v1"
KEYED_PREFIX = "prompt-hmac:"
# How ``redact_secrets`` counts the ids it keyed, beside the secrets' kinds.
CAPTURE_ID = "capture_id"


def stored_source_id(source_id: str) -> str:
    """The id ``source_id`` is stored and looked up under: keyed if it is a digest of
    the prompt (the hook's form), else as sent (a caller-chosen name)."""
    if not is_digest(source_id):
        return source_id
    return KEYED_PREFIX + salted_hmac(_KEY_SALT, source_id, algorithm="sha256").hexdigest()


def is_digest(source_id: str) -> bool:
    """Whether ``source_id`` has the hook's form: a digest of the prompt as typed."""
    return _DIGEST_ID.fullmatch(source_id) is not None


def keyed_refs(refs: Sequence[Any]) -> tuple[list[Any], int]:
    """``refs`` (source references: ``name`` and ``source_id``) with each id of the
    hook's form keyed as the capture was stored, and how many were; anything that is not
    a reference is kept as it is."""
    keyed = 0
    found = []
    for ref in refs:
        source_id = ref.get("source_id") if isinstance(ref, Mapping) else None
        if isinstance(source_id, str) and is_digest(source_id):
            ref = {**ref, "source_id": stored_source_id(source_id)}
            keyed += 1
        found.append(ref)
    return found, keyed
