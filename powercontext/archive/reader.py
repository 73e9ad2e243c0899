"""Reading an archive: its grammar, its digests and each record, line by line.

``Reader(file, strict=...).events()`` yields what the archive says, in order, and raises
``ArchiveRefused`` naming the first line that is not as docs/portability.md specifies:

    archive  = header scope* manifest
    scope    = scope-start (stream-start row* stream-end)* scope-end

with every registered stream once per scope, in registration order. Memory stays flat:
only the current line, running digests and the verifiers' small state are held.
"""

import hashlib
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from powercontext.archive import format as archive_format
from powercontext.archive.format import GENESIS, ArchiveRefused, Line, unseal
from powercontext.archive.streams import (
    Column,
    Stream,
    StreamVerifier,
    left_out,
    reasons_left_out,
    streams,
)


def describe_scope(scope_id: str) -> str:
    """A scope id as a message shows it: escaped, and cut if very long."""
    shown = repr(scope_id)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def header_streams(version: int | None = None) -> list[dict[str, Any]]:
    """The header's description of this server's streams (of those an archive of format
    ``version`` carries), which an archive must equal."""
    return [
        {
            "name": stream.name,
            "model": stream.model,
            "scope": stream.scope,
            "order": list(stream.order),
            "columns": [column.describe() for column in stream.columns()],
            "left_out": reasons_left_out(stream),
        }
        for stream in streams(version)
    ]


def header_left_out() -> list[dict[str, str]]:
    return [{"model": item.model, "why": item.why} for item in left_out()]


class SectionCheck:
    """The checks of one stream's rows in one scope that need the rows before them: the
    order, the scope column, and the stream's own verifier."""

    def __init__(self, stream: Stream, scope_id: str, shared: dict[str, Any]) -> None:
        self.stream = stream
        self.scope_id = scope_id
        self.local_scope = stream.scope == "scope_id"
        self.verifier: StreamVerifier | None = stream.new_verifier(scope_id, shared)
        self.last: tuple[Any, ...] | None = None

    def row(self, values: Mapping[str, Any]) -> str | None:
        if self.local_scope and values["scope_id"] != self.scope_id:
            return "scope_id is not the scope of its section"
        key = tuple(values[name] for name in self.stream.order)
        if self.last is not None and not key > self.last:
            order = ", ".join(self.stream.order)
            return f"not after the row before it in ({order}) order (out of order or repeated)"
        self.last = key
        return None if self.verifier is None else self.verifier.row(values)

    def end(self) -> str | None:
        return None if self.verifier is None else self.verifier.end()


# -- events ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScopeStart:
    scope_id: str
    line: int


@dataclass(frozen=True)
class Row:
    stream: Stream
    columns: list[Column]
    values: dict[str, Any]
    line: int


@dataclass(frozen=True)
class StreamEnd:
    scope_id: str
    stream: Stream
    rows: int
    line: int


@dataclass(frozen=True)
class ScopeEnd:
    scope_id: str
    rows: int
    line: int
    # The chain digest at this line: equal in two reads only if every byte before it is.
    digest: bytes


@dataclass
class Summary:
    """What a complete read found: the header, and per scope its rows by stream."""

    header: dict[str, Any]
    records: int = 0
    bytes: int = 0
    rows: dict[str, dict[str, int]] = field(default_factory=dict)
    # The digest of every line before the manifest, the manifest's HMAC of it (None:
    # not signed), the chain digest of the last line (the archive's root digest) and
    # the sha256 of the whole file, as sha256sum gives it.
    content_sha256: str = ""
    hmac: str | None = None
    root: str = ""
    file_sha256: str = ""


class Reader:
    """One pass over an archive. ``strict``: also require canonical bodies and run the
    streams' verifiers (the verifying pass); the writing pass re-reads bytes whose chain
    it compares with the verifying pass's at each scope's end."""

    def __init__(self, file: IO[bytes], *, strict: bool = True) -> None:
        self.file = file
        self.strict = strict
        self.streams = streams()
        self.columns = {stream.name: stream.columns() for stream in self.streams}
        self.summary: Summary | None = None
        self._lines = archive_format.raw_lines(file)
        self._previous = GENESIS
        self._whole = hashlib.sha256()
        self._count = 0
        self._bytes = 0

    def _next(self, expecting: str) -> Line:
        try:
            number, raw = next(self._lines)
        except StopIteration:
            if self._count == 0:
                raise ArchiveRefused(archive_format.not_an_archive(b""), line=1) from None
            raise ArchiveRefused(
                f"missing: the archive ends after line {self._count} where {expecting} "
                "should follow (truncated)",
                line=self._count + 1,
            ) from None
        line = unseal(self._previous, number, raw, strict=self.strict)
        self._previous = line.digest
        self._count = number
        self._bytes += len(raw)
        return line

    def _type(self, line: Line, *expected: str) -> str:
        kind = line.record.get("type")
        if kind not in expected:
            wanted = " or ".join(repr(name) for name in expected)
            raise ArchiveRefused(f"a {kind!r} record where {wanted} should be", line=line.number)
        return str(kind)

    def events(self) -> Iterator[ScopeStart | Row | StreamEnd | ScopeEnd]:
        header = self._header()
        summary = Summary(header)
        stated: list[list[Any]] = []
        for scope_id in header["scopes"]:
            rows_by_stream: dict[str, int] = {}
            yield from self._scope(scope_id, rows_by_stream, stated)
            summary.rows[scope_id] = rows_by_stream
        whole = self._whole.hexdigest()
        records = self._count
        line = self._next("the closing manifest")
        self._type(line, "manifest")
        manifest = line.record
        expected = {
            "type": "manifest",
            "records": records,
            "scopes": len(header["scopes"]),
            "sha256": whole,
            "streams": stated,
        }
        for name in ("records", "scopes", "sha256", "streams"):
            if manifest.get(name) != expected[name]:
                raise ArchiveRefused(
                    f"the manifest's {name} does not match the archive", line=line.number
                )
        signature = manifest.get("hmac")
        if signature is not None:
            expected["hmac"] = signature
            if not isinstance(signature, str) or len(signature) != 64:
                raise ArchiveRefused("the manifest's hmac is malformed", line=line.number)
        if set(manifest) != set(expected):
            raise ArchiveRefused("the manifest has fields it should not", line=line.number)
        extra = next(self._lines, None)
        if extra is not None:
            raise ArchiveRefused("data after the closing manifest", line=extra[0])
        summary.records = self._count
        summary.bytes = self._bytes
        summary.content_sha256 = whole
        summary.hmac = signature
        summary.root = line.digest.hex()
        self._whole.update(line.raw)
        summary.file_sha256 = self._whole.hexdigest()
        self.summary = summary

    def _advance(self, expecting: str) -> Line:
        line = self._next(expecting)
        self._whole.update(line.raw)
        return line

    def _header(self) -> dict[str, Any]:
        line = self._advance("the archive's header")
        record = line.record
        if record.get("type") != "archive" or record.get("format") != archive_format.FORMAT:
            raise ArchiveRefused("not a PowerContext archive (no archive header)", line=1)
        version = record.get("version")
        if isinstance(version, bool) or version not in archive_format.READABLE:
            readable = " and ".join(str(known) for known in archive_format.READABLE)
            raise ArchiveRefused(
                f"archive format version {version!r}; this server reads versions {readable}",
                line=1,
            )
        # An older version's scopes hold the sections of the streams it carried only.
        self.streams = streams(version)
        ours = header_streams(version)
        theirs = record.get("streams")
        if theirs != ours:
            raise ArchiveRefused(_schema_difference(theirs, ours), line=1)
        scopes = record.get("scopes")
        if (
            not isinstance(scopes, list)
            or not all(isinstance(scope, str) for scope in scopes)
            or scopes != sorted(set(scopes))
        ):
            raise ArchiveRefused("the header's scopes are not a sorted list of ids", line=1)
        return record

    def _scope(
        self, scope_id: str, rows_by_stream: dict[str, int], stated: list[list[Any]]
    ) -> Iterator[ScopeStart | Row | StreamEnd | ScopeEnd]:
        line = self._advance(f"the section of scope {describe_scope(scope_id)}")
        self._type(line, "scope")
        if line.record != {"type": "scope", "scope_id": scope_id}:
            raise ArchiveRefused(
                f"expected the start of scope {describe_scope(scope_id)}", line=line.number
            )
        yield ScopeStart(scope_id, line.number)
        shared: dict[str, Any] = {}
        total = 0
        for stream in self.streams:
            rows, digest = yield from self._stream(scope_id, stream, shared)
            rows_by_stream[stream.name] = rows
            stated.append([scope_id, stream.name, rows, digest])
            total += rows
        line = self._advance(f"the end of scope {describe_scope(scope_id)}")
        self._type(line, "scope_end")
        if line.record != {"type": "scope_end", "scope_id": scope_id, "rows": total}:
            raise ArchiveRefused(
                f"the end of scope {describe_scope(scope_id)} does not match its rows ({total})",
                line=line.number,
            )
        yield ScopeEnd(scope_id, total, line.number, line.digest)

    def _stream(
        self, scope_id: str, stream: Stream, shared: dict[str, Any]
    ) -> Generator[Row | StreamEnd, None, tuple[int, str]]:
        """The stream's rows and end; returns (rows, sha256 of the rows' bodies)."""
        where = f"{stream.name} of scope {describe_scope(scope_id)}"
        line = self._advance(f"the stream {where}")
        if line.record != {"type": "stream", "scope_id": scope_id, "stream": stream.name}:
            raise ArchiveRefused(f"expected the start of the stream {where}", line=line.number)
        columns = self.columns[stream.name]
        names = {column.name for column in columns}
        check = SectionCheck(stream, scope_id, shared) if self.strict else None
        digest = hashlib.sha256()
        rows = 0
        while True:
            line = self._advance(f"a row or the end of the stream {where}")
            kind = self._type(line, "row", "stream_end")
            if kind == "stream_end":
                break
            rows += 1
            digest.update(line.body + b"\n")
            what = f"{where}, row {rows}"
            raw = line.record.get("values")
            if set(line.record) != {"type", "values"} or not isinstance(raw, dict):
                raise ArchiveRefused(f"{what}: a row holds type and values only", line=line.number)
            if set(raw) != names:
                missing, unknown = sorted(names - set(raw)), sorted(set(raw) - names)
                raise ArchiveRefused(
                    f"{what}: columns differ (missing {missing}, unknown {unknown})",
                    line=line.number,
                )
            values = {}
            for column in columns:
                value, problem = column.decode(raw[column.name])
                if problem:
                    raise ArchiveRefused(f"{what}: {problem}", line=line.number)
                values[column.name] = value
            if check is not None:
                problem = check.row(values)
                if problem:
                    raise ArchiveRefused(f"{what}: {problem}", line=line.number)
            yield Row(stream, columns, values, line.number)
        expected = {
            "type": "stream_end",
            "scope_id": scope_id,
            "stream": stream.name,
            "rows": rows,
            "sha256": digest.hexdigest(),
        }
        if line.record != expected:
            raise ArchiveRefused(
                f"the end of the stream {where} does not match its {rows} row(s) (count or sha256)",
                line=line.number,
            )
        if check is not None:
            problem = check.end()
            if problem:
                raise ArchiveRefused(f"{where}: {problem}", line=line.number)
        yield StreamEnd(scope_id, stream, rows, line.number)
        return rows, digest.hexdigest()


def _schema_difference(theirs: Any, ours: list[dict[str, Any]]) -> str:
    """Why an archive's streams are not this server's, in one line."""
    if not isinstance(theirs, list) or not all(isinstance(item, dict) for item in theirs):
        return "the header's streams are malformed"
    their_names = [item.get("name") for item in theirs]
    our_names = [item["name"] for item in ours]
    if their_names != our_names:
        return (
            f"the archive's streams {their_names} are not this server's {our_names}: "
            "written by another release"
        )
    for their, our in zip(theirs, ours, strict=True):
        if their != our:
            differing = sorted(
                key for key in our.keys() | their.keys() if our.get(key) != their.get(key)
            )
            return (
                f"the stream {our['name']} differs from this server's in {differing}: "
                "written by another release (a new format version is needed to read it)"
            )
    return "the header's streams differ from this server's"
