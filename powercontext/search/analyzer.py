"""The text analyzer shared by every search backend, on write and on query.

Unicode NFC, casefold; runs of letters, digits, combining marks and ``_`` are terms;
CJK characters (which are not separated by spaces) become unigram and bigram tokens.
Plain ASCII words are reduced to their English Snowball stem, so a question about
"researching" finds a memory about "research" (measured on LoCoMo: +3 points of recall
on bare questions).
The output is plain space-separated tokens, so SQLite FTS5 (unicode61) and OceanBase
(``PARSER SPACE``) split it identically and the same text gives the same tokens on both.
Pure: no Django, no I/O.
"""

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

import Stemmer

# Longer runs (hashes, base64, minified code) are cut so an index never holds
# pathological tokens; the same cut applies to queries, so matching is unaffected.
MAX_TOKEN_CHARS = 64

_CJK_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x323AF),  # CJK Extensions B..H
)


_english = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) stem of an ASCII word, so "researching" finds "research";
    anything else (other scripts, words with digits or "_", identifiers) is kept as is."""
    if word.isascii() and word.isalpha():
        stemmed: str = _english.stemWord(word)
        return stemmed
    return word


# The first CJK code point: everything below it (ASCII, Latin, Cyrillic, ...) is not.
_CJK_START = _CJK_RANGES[0][0]
# For pure-ASCII text (most prompts) the term characters are exactly these.
_ASCII_RUN = re.compile(r"[a-z0-9_]+")


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return code >= _CJK_START and any(low <= code <= high for low, high in _CJK_RANGES)


def _is_term_char(char: str) -> bool:
    return char == "_" or unicodedata.category(char)[0] in "LNM"


_OTHER, _TERM, _CJK_TERM = 0, 1, 2


@lru_cache(maxsize=65536)
def _char_class(char: str) -> int:
    """Whether ``char`` is a term character, and a CJK one. Looked up once per distinct
    character rather than classified anew each time (issue 27: a prompt of 8,192
    ideographs, three passes a prepare); bounded, since a text may bring any of a
    million code points."""
    if not _is_term_char(char):
        return _OTHER
    return _CJK_TERM if _is_cjk(char) else _TERM


def _runs(text: str) -> Iterator[tuple[str, bool]]:
    """Yield maximal runs of term characters, each flagged CJK or not."""
    start = 0
    current = _OTHER
    for index, kind in enumerate(map(_char_class, text)):
        if kind != current:
            if current != _OTHER:
                yield text[start:index], current == _CJK_TERM
            start, current = index, kind
    if current != _OTHER:
        yield text[start:], current == _CJK_TERM


def tokens(text: str) -> list[str]:
    """All tokens of ``text`` in order, repeats kept (term frequency matters)."""
    if text.isascii():
        # The same result as below, by regular expression: ASCII has no marks or CJK.
        return [stem(run[:MAX_TOKEN_CHARS]) for run in _ASCII_RUN.findall(text.lower())]
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    result: list[str] = []
    for run, is_cjk in _runs(folded):
        if not is_cjk:
            result.append(stem(run[:MAX_TOKEN_CHARS]))
            continue
        # Each character, then the bigram it starts (none after the last), built by
        # slices rather than appended one by one: 1.9 ms for 8,192 ideographs, not 10.
        pairs = [""] * (2 * len(run) - 1)
        pairs[0::2] = run
        pairs[1::2] = [run[index : index + 2] for index in range(len(run) - 1)]
        result.extend(pairs)
    return result


def searchable_text(text: str) -> str:
    """What a full-text index stores for ``text``."""
    return " ".join(tokens(text))


def query_terms(text: str) -> list[str]:
    """The distinct tokens of a query, in order of first appearance."""
    return list(dict.fromkeys(tokens(text)))
