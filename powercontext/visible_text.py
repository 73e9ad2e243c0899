"""Stored text shown to a reviewer exactly: what a browser would hide or rewrite is made
visible, and a form round trip gives back the stored text unchanged.

Two rules, both about the browser rather than the data:

- **Showing.** Bidi overrides, zero-width and other format or control characters change
  what a reader sees without being seen (``U+202E`` shows ``gnp.exe`` as ``exe.png``).
  ``reveal`` escapes the text for HTML first and then replaces each such character by a
  visible marker ``⟨U+202E⟩``; the stored text never changes.
- **Editing.** A textarea cannot hold NUL (the HTML parser makes it U+FFFD), turns every
  CR into a line break and submits every line break as CRLF. ``editable`` writes those
  characters as the same markers and ``submitted`` turns a submission back, so an
  unedited field comes back identical and an edited one keeps the characters the
  reviewer left alone. A literal marker in the stored text is itself written with a
  marker for its ``⟨``, so the two never mix.
"""

import re
import unicodedata

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

MARKER = re.compile(r"⟨U\+([0-9A-F]{4,6})⟩")
_OPEN = "⟨"

# Letters that render as nothing (Hangul fillers, the combining grapheme joiner, the
# braille blank): assigned and not format characters, yet used to hide text.
_INVISIBLE_LETTERS = frozenset("\u034f\u115f\u1160\u2800\u3164\uffa0")


def is_hidden(char: str) -> bool:
    """Whether ``char`` changes or hides what a reader sees without being seen itself.

    Tab and line feed are ordinary layout; every other control character, every format
    character (bidi controls, zero-width characters, the BOM, tags), the Unicode line and
    paragraph separators and the noncharacters are hidden.
    """
    if char in "\t\n":
        return False
    if char in _INVISIBLE_LETTERS:
        return True
    category = unicodedata.category(char)
    if category in ("Cc", "Cf", "Zl", "Zp", "Cs"):
        return True
    point = ord(char)
    return (point & 0xFFFE) == 0xFFFE or 0xFDD0 <= point <= 0xFDEF


def marker(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


def _decodable(match: re.Match) -> bool:
    point = int(match.group(1), 16)
    return point <= 0x10FFFF and not 0xD800 <= point <= 0xDFFF


def _starts_marker(text: str, index: int) -> bool:
    match = MARKER.match(text, index)
    return match is not None and _decodable(match)


# -- showing --------------------------------------------------------------------------


def reveal(text: str) -> SafeString:
    """``text`` as safe HTML: escaped, with each hidden character replaced by a marker
    (a CR of a CRLF line break is layout and stays as it is)."""
    parts: list[str] = []
    plain_from = 0
    for index, char in enumerate(text):
        if not is_hidden(char) or (char == "\r" and text.startswith("\n", index + 1)):
            continue
        parts.append(escape(text[plain_from:index]))
        name = unicodedata.name(char, "")
        title = f"U+{ord(char):04X} {name}".strip()
        parts.append(format_html('<span class="pc-mark" title="{}">{}</span>', title, marker(char)))
        plain_from = index + 1
    parts.append(escape(text[plain_from:]))
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped


def excerpt(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- editing --------------------------------------------------------------------------


def breaks_are_crlf(text: str) -> bool:
    """Whether every line break of ``text`` is CRLF (and it has one): such text is edited
    with plain line breaks and written back with CRLF."""
    return "\n" in text and text.count("\n") == text.count("\r\n")


def editable(text: str, *, crlf: bool) -> str:
    """``text`` as a textarea or hidden input can carry it: line breaks as line breaks
    (CRLF ones when ``crlf``), every other CR or LF, NUL and hidden character as a
    marker, and the ``⟨`` of a literal marker as a marker too."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if crlf and text.startswith("\r\n", index):
            out.append("\n")
            index += 2
            continue
        if char == "\n":
            out.append(marker(char) if crlf else char)
        elif char == _OPEN and _starts_marker(text, index):
            out.append(marker(char))
        elif char == "\x00" or is_hidden(char):
            out.append(marker(char))
        else:
            out.append(char)
        index += 1
    return "".join(out)


def submitted(value: str, *, crlf: bool) -> str:
    """The text a browser submitted for ``editable(text, crlf=crlf)``, turned back:
    ``submitted(editable(t, crlf=c), c) == t`` for every ``t``, as a browser sends it
    (every line break as CRLF)."""
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    if crlf:
        value = value.replace("\n", "\r\n")
    return MARKER.sub(
        lambda match: chr(int(match.group(1), 16)) if _decodable(match) else match.group(0),
        value,
    )
