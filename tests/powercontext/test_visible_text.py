"""The desk's text rules: hidden characters are marked after escaping, and a form round
trip through a browser gives the stored text back exactly."""

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from powercontext.visible_text import breaks_are_crlf, editable, is_hidden, reveal, submitted

# Any text the API accepts: every code point but lone surrogates.
api_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=60)
# Pieces that meet at the edges of the rules: markers, their parts, every line ending.
tricky_text = st.lists(
    st.sampled_from(
        ["a", " ", "\n", "\r", "\r\n", "\x00", "\u202e", "⟨", "U+", "0041", "D800", "⟩", "é"]
    ),
    max_size=30,
).map("".join)


def browser_round_trip(value: str) -> str:
    """What a browser submits for a textarea or hidden input holding ``value``: the HTML
    parser's input-stream rules (CRLF and CR become LF, NUL becomes U+FFFD), then the
    form encoding's (every line break submitted as CRLF)."""
    parsed = value.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
    return parsed.replace("\n", "\r\n")


@given(api_text)
def test_any_text_survives_a_browser_round_trip(text):
    crlf = breaks_are_crlf(text)
    assert submitted(browser_round_trip(editable(text, crlf=crlf)), crlf=crlf) == text


@given(tricky_text)
def test_markers_escapes_and_line_endings_survive(text):
    for crlf in (False, True):
        assert submitted(browser_round_trip(editable(text, crlf=crlf)), crlf=crlf) == text


def test_the_reported_characters_come_back_unchanged():
    text = "line one\nline two\r\nalone\rthen NUL \x00 and ⟨U+0000⟩ literally"
    crlf = breaks_are_crlf(text)
    shown = editable(text, crlf=crlf)
    assert "\x00" not in shown
    assert "\r" not in shown
    assert "⟨U+0000⟩" in shown
    assert submitted(browser_round_trip(shown), crlf=crlf) == text


def test_crlf_text_is_edited_with_plain_line_breaks():
    text = "first\r\nsecond\r\n"
    assert breaks_are_crlf(text)
    assert editable(text, crlf=True) == "first\nsecond\n"
    assert submitted("first\r\nsecond, edited\r\n", crlf=True) == "first\r\nsecond, edited\r\n"


def test_plain_line_breaks_are_not_rewritten_as_crlf():
    assert submitted("a\r\nb", crlf=False) == "a\nb"


def test_reveal_marks_bidi_override_after_escaping():
    shown = str(reveal("<b>gnp\u202e.exe</b>"))
    assert "\u202e" not in shown
    assert "⟨U+202E⟩" in shown
    assert "RIGHT-TO-LEFT OVERRIDE" in shown
    assert "&lt;b&gt;" in shown
    assert "<b>" not in shown
    # The visible text reads the stored characters in stored order.
    assert html.unescape(re.sub(r"<[^>]+>", "", shown)) == "<b>gnp⟨U+202E⟩.exe</b>"


def test_reveal_marks_zero_width_and_control_characters_but_not_layout():
    shown = str(reveal("a\u200bb\x00c\x07d\te\nf\r\ng\rh\u2028i\ufeff"))
    for point in ("200B", "0000", "0007", "000D", "2028", "FEFF"):
        assert f"⟨U+{point}⟩" in shown
    assert shown.count("⟨U+000D⟩") == 1  # the lone CR, not the CR of CRLF
    assert "\t" in shown
    assert "\n" in shown


def test_reveal_leaves_ordinary_text_alone():
    text = "Ünïcödé text, emoji 🎉, Hebrew שלום and spaces"
    assert str(reveal(text)) == html.escape(text)
    assert not any(is_hidden(char) for char in text)
