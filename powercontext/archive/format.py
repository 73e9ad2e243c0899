"""The archive's lines and digests (docs/portability.md, "Lines and digests").

An archive is JSON Lines: every line is exactly

    {"digest":"<64 lowercase hex>","record":<body>}\\n

where ``<body>`` is one JSON object (a record) written with sorted keys, no spaces and
every character outside ASCII escaped (so no line reader ever meets a raw U+2028, NUL or
invalid text), and the digest is ``sha256(previous digest || body)``, the previous
digest of the first line being ``GENESIS``. Each digest covers every byte before it, so
the first line whose digest does not recompute is the first record that was altered,
removed or inserted, and a reader can name it.

Standard library only: the format is read and written without Django.
"""

import hashlib
import hmac
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

FORMAT = "powercontext-archive"
VERSION = 3
# The versions this release reads: version 3 added the Memory session-start marks, so a
# version 2 archive is read as one whose scopes hold none (docs/portability.md,
# "Versions").
READABLE = (2, 3)
GENESIS = hashlib.sha256(FORMAT.encode("ascii") + b"\x00").digest()

_PREFIX = b'{"digest":"'
_MIDDLE = b'","record":'
_SUFFIX = b"}\n"
_HEX = re.compile(rb"[0-9a-f]{64}")
_BODY_START = len(_PREFIX) + 64 + len(_MIDDLE)


class ArchiveRefused(Exception):
    """The archive cannot be read or imported. ``line`` is the 1-based line of the first
    bad record (None for a fault of the archive as a whole or of the target)."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        self.line = line
        self.reason = message
        super().__init__(message if line is None else f"line {line}: {message}")


def body_of(record: dict[str, Any]) -> bytes:
    """A record's one canonical serialization."""
    return json.dumps(
        record, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False
    ).encode("ascii")


def seal(previous: bytes, body: bytes) -> tuple[bytes, bytes]:
    """(this line's digest, the whole line) for ``body`` after a line of digest
    ``previous``."""
    digest = hashlib.sha256(previous + body).digest()
    return digest, _PREFIX + digest.hex().encode("ascii") + _MIDDLE + body + _SUFFIX


@dataclass(frozen=True)
class Line:
    number: int
    digest: bytes
    body: bytes
    record: dict[str, Any]
    raw: bytes


def unseal(previous: bytes, number: int, raw: bytes, *, strict: bool = True) -> Line:
    """Check one line against the digest before it and parse its record.

    Raises ArchiveRefused naming ``number``: a line cut short, a line not of the
    archive's shape, a digest that does not recompute (this record was altered, or one
    before it removed or inserted), a body that is not one JSON object. With ``strict``
    the body must also be the record's canonical serialization (one spelling per record:
    no duplicate keys, no other escapes); the writing pass, which re-reads bytes already
    checked so, leaves that out.
    """
    shaped = raw.startswith(_PREFIX) and raw.endswith(_SUFFIX) and len(raw) > _BODY_START + 2
    if number == 1 and not raw.startswith(_PREFIX) and not _PREFIX.startswith(raw):
        # Not even the start of an archive: say what the file is instead (issue 42).
        raise ArchiveRefused(not_an_archive(raw[:64]), line=1)
    if not raw.endswith(b"\n"):
        raise ArchiveRefused("the line is cut off (no end of line): truncated", line=number)
    if not shaped:
        raise ArchiveRefused("not an archive line", line=number)
    stated = raw[len(_PREFIX) : len(_PREFIX) + 64]
    if not _HEX.fullmatch(stated) or raw[len(_PREFIX) + 64 : _BODY_START] != _MIDDLE:
        raise ArchiveRefused("not an archive line (its digest is malformed)", line=number)
    body = raw[_BODY_START : -len(_SUFFIX)]
    digest = hashlib.sha256(previous + body).digest()
    if digest.hex().encode("ascii") != stated:
        raise ArchiveRefused(
            "digest does not match: this record was altered, or one before it was "
            "removed or inserted",
            line=number,
        )
    try:
        record = json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as error:
        raise ArchiveRefused(f"the record is not JSON ({error})", line=number) from None
    if not isinstance(record, dict):
        raise ArchiveRefused("the record is not a JSON object", line=number)
    if strict and body_of(record) != body:
        raise ArchiveRefused("the record is not in its canonical form", line=number)
    return Line(number, digest, body, record, raw)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# The longest line an archive may hold: a record holds at most one row, and the largest
# (a captured prompt of 200,000 characters, each escaped as up to 12 ASCII bytes, with
# its metadata) stays well under it. A reader holds at most this much of a line, so its
# memory is bounded whatever the file holds (a 300 MB line was read whole).
MAX_LINE_BYTES = 16 * 1024 * 1024


def raw_lines(file: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes]]:
    """(1-based number, bytes with their end of line) of each line; the last may lack
    its end of line (``unseal`` then says it was cut off). Reads at most ``limit`` + 1
    bytes of a line: a longer one raises ArchiveRefused without reading the rest."""
    number = 0
    while True:
        raw = file.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit:
            if number == 1 and not raw.startswith(_PREFIX):
                raise ArchiveRefused(not_an_archive(raw[:64]), line=1)
            raise ArchiveRefused(
                f"the line is longer than {limit:,} bytes, the most an archive line may "
                "hold: not an archive written by manage.py export",
                line=number,
            )
        yield number, raw


def not_an_archive(start: bytes) -> str:
    """What a file whose first line is no archive line is, by its first bytes, and what
    was expected."""
    expected = (
        "expected a PowerContext archive as `manage.py export` writes it (JSON Lines, each "
        '{"digest":...,"record":...}, the first an archive header)'
    )
    if start.startswith(b"SQLite format 3\x00"):
        kind = (
            "a SQLite database (a `manage.py backup` copy, or the data file itself): restore "
            "it by copying it into the data directory while the server is stopped, and "
            "export from a server running on it to get an archive"
        )
    elif start.startswith(b"\x1f\x8b"):
        kind = "a gzip-compressed file: decompress it first (gunzip FILE)"
    elif start.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        kind = "a zip archive: unzip it and import the archive file inside"
    elif start.startswith((b"\x28\xb5\x2f\xfd", b"BZh", b"\xfd7zXZ")):
        kind = "a compressed file (zstd, bzip2 or xz): decompress it first"
    elif not start.strip():
        kind = "empty (truncated to nothing, or never written)"
    elif start.lstrip()[:1] in (b"{", b"["):
        kind = "JSON, but not an archive"
    else:
        kind = "not an archive"
    return f"this file is {kind}; {expected}"


class Writer:
    """Writes sealed records to ``file``, keeping the digests the closing manifest
    states: the chain, the whole file's sha256 and each stream's."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.previous = GENESIS
        self.whole = hashlib.sha256()
        self.lines = 0
        self.bytes = 0

    def write(self, record: dict[str, Any]) -> bytes:
        """Seal and write ``record``; returns its body (what stream digests cover)."""
        body = body_of(record)
        self.previous, line = seal(self.previous, body)
        self.file.write(line)
        self.whole.update(line)
        self.lines += 1
        self.bytes += len(line)
        return body


# -- origin: an HMAC under a key the user holds ------------------------------------------

_HMAC_DOMAIN = b"powercontext.archive-hmac.v1\x00"
MIN_KEY_BYTES = 16


def archive_hmac(key: bytes, content_sha256: str) -> str:
    """The manifest's ``hmac``: HMAC-SHA256 under ``key`` of the digest of every line
    before the manifest (its ``sha256``). The digests prove an archive was not damaged
    by accident; anyone can recompute them after an edit. Only the key's holder can
    compute this."""
    return hmac.new(key, _HMAC_DOMAIN + content_sha256.encode("ascii"), hashlib.sha256).hexdigest()


def hmac_matches(key: bytes, content_sha256: str, stated: str) -> bool:
    return hmac.compare_digest(archive_hmac(key, content_sha256), stated)
