"""The key that signs and checks an archive's origin (docs/portability.md, "Origin").

An archive's digests show it was not damaged by accident, and nothing more: anyone who
edits a record can recompute them with the project's own functions. A key the user
holds (``--key-file FILE``, else ``POWERCONTEXT_ARCHIVE_KEY``) lets ``export`` put an
HMAC in the manifest and ``import`` refuse an archive whose HMAC does not match, so a
changed and resealed archive is caught. Without a key, import says it checked integrity,
not origin.
"""

import os
from pathlib import Path

from powercontext.archive.format import MIN_KEY_BYTES

KEY_VARIABLE = "POWERCONTEXT_ARCHIVE_KEY"


class ArchiveKeyError(ValueError):
    """The key cannot be read or is too short: the message says which and why."""


def archive_key(key_file: Path | None) -> bytes | None:
    """The key from ``key_file`` (its bytes, without a trailing end of line), else from
    the environment, else None. Raises :class:`ArchiveKeyError` for a file that cannot be
    read or a key shorter than ``MIN_KEY_BYTES`` bytes."""
    if key_file is not None:
        try:
            key = key_file.read_bytes().rstrip(b"\r\n")
        except OSError as error:
            raise ArchiveKeyError(
                f"cannot read the key file {key_file}: {error.strerror}"
            ) from None
        where = f"the key file {key_file}"
    else:
        value = os.environ.get(KEY_VARIABLE, "")
        if not value:
            return None
        key = value.encode("utf-8")
        where = KEY_VARIABLE
    if len(key) < MIN_KEY_BYTES:
        raise ArchiveKeyError(
            f"{where} holds {len(key)} byte(s); a key needs at least {MIN_KEY_BYTES} "
            '(make one: python -c "import secrets; print(secrets.token_hex(32))" > FILE)'
        )
    return key
