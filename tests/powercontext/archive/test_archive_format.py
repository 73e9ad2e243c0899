"""The archive's line format (``powercontext.archive.format``): any record survives a
seal and an unseal exactly, every line is one line of ASCII whatever its text, and a
change of any byte, a dropped line or two lines swapped is refused naming the line."""

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.archive.format import GENESIS, ArchiveRefused, Writer, body_of, seal, unseal

# Any text, lone surrogates included: the archive must carry what a database returns.
TEXT = st.text(st.characters(codec=None, categories=None), max_size=40)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=12,
)
RECORDS = st.dictionaries(TEXT, JSON, max_size=5)


def sealed(records):
    out = io.BytesIO()
    writer = Writer(out)
    for record in records:
        writer.write(record)
    return out.getvalue().splitlines(keepends=True)


def read(lines):
    previous = GENESIS
    found = []
    for number, raw in enumerate(lines, start=1):
        line = unseal(previous, number, raw)
        previous = line.digest
        found.append(line.record)
    return found


@given(st.lists(RECORDS, min_size=1, max_size=4))
def test_records_come_back_exactly(records):
    assert read(sealed(records)) == records


@given(RECORDS)
def test_a_line_is_one_line_of_ascii(record):
    lines = sealed([record])
    (line,) = lines
    assert line.isascii()
    assert line.count(b"\n") == 1
    assert line.endswith(b"}\n")
    # No byte a line reader might take for the end of a line (U+2028 is escaped).
    assert b"\r" not in line
    assert b"\x00" not in line


@given(st.lists(RECORDS, min_size=1, max_size=3), st.data())
def test_any_changed_byte_is_refused_naming_its_line(records, data):
    lines = sealed(records)
    number = data.draw(st.integers(1, len(lines)))
    line = bytearray(lines[number - 1])
    offset = data.draw(st.integers(0, len(line) - 1))
    line[offset] = (line[offset] + data.draw(st.integers(1, 255))) % 256
    changed = [*lines[: number - 1], bytes(line), *lines[number:]]
    # As a reader splits the file: a changed end of line joins or splits lines.
    changed = b"".join(changed).splitlines(keepends=True)
    with pytest.raises(ArchiveRefused) as refused:
        read(changed)
    assert refused.value.line == number


@given(st.lists(RECORDS, min_size=3, max_size=5), st.data())
def test_a_dropped_or_moved_line_is_refused_where_the_chain_breaks(records, data):
    lines = sealed(records)
    index = data.draw(st.integers(0, len(lines) - 2))
    dropped = lines[:index] + lines[index + 1 :]
    with pytest.raises(ArchiveRefused, match="digest does not match") as refused:
        read(dropped)
    assert refused.value.line == index + 1
    swapped = list(lines)
    swapped[index], swapped[index + 1] = swapped[index + 1], swapped[index]
    if swapped != lines:
        with pytest.raises(ArchiveRefused) as refused:
            read(swapped)
        assert refused.value.line == index + 1


def test_a_body_in_another_spelling_is_refused():
    body = b'{"b":1,"a":2}'
    _, line = seal(GENESIS, body)
    with pytest.raises(ArchiveRefused, match="canonical"):
        unseal(GENESIS, 1, line)
    assert body_of({"b": 1, "a": 2}) == b'{"a":2,"b":1}'


def test_a_body_with_a_constant_that_is_not_json_is_refused():
    _, line = seal(GENESIS, b'{"a":NaN}')
    with pytest.raises(ArchiveRefused, match="not JSON"):
        unseal(GENESIS, 1, line)
