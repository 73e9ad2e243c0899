"""Anchors: a query's names and identifiers, and whether an entry holds them. Pure.

A prompt's names and identifiers (``zq20c249a9551941``, ``make_release``, ``GraphQL``, a
person's name in mid-sentence) say exactly what it is about, and the embedding model
cannot read them (to it one hex string looks like another): ``anchor_names`` finds them,
``held`` says which an entry holds whole, ``picks_out`` whether one singles entries out
of a scope. ``readable`` says whether the model can read a text at all.
"""

import functools
import hashlib
import re
import unicodedata
from collections.abc import Collection

from powercontext.search import analyzer
from powercontext.search.policy import STOP_TERMS
from powercontext.search.relevance import numbers

# Words that name something: identifiers with digits or underscores, inner capitals
# (GraphQL, NamedTuple), or a capital inside a sentence. Not all capitals alone (API, CI,
# AGENTS.md): acronyms and boilerplate file names, not subjects; and not the first word of
# a sentence, a line or a list item ("- Add a test"). Such words one space apart are one
# name ("Split View", "Apple Pay"): each of its words alone is another thing.
# CJK characters end a word: Chinese and Japanese write identifiers against their own
# text without a space ("调大HikariPool的连接池").
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[^\W_{_CJK}](?:[^\W{_CJK}]|[.-](?=[^\W{_CJK}]))*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?:;]\s|[.!?:;]$")


def anchor_names(text: str) -> frozenset[frozenset[str]]:
    """``text``'s names and identifiers (see the module's docstring), each as the analyzer
    terms an entry must hold together to hold it: ``release-3.14.2-rc1`` is one name of
    five terms, and an entry saying "net 14" does not hold it. Capitalised words one
    space apart are one name (``COMPOUND_NAMES``): "Split View", "Dynamic Island"."""
    found: set[frozenset[str]] = set()
    compound = bool(numbers.COMPOUND_NAMES)
    for line in text.splitlines():
        at_start, end = True, 0
        run: list[frozenset[str]] = []  # the names of the capitalised words just read
        for match in _WORD.finditer(line):
            word = match.group(0)
            if word.islower() and word.isalpha() and word.isascii():
                # Most of a prompt's words, never a name (checked in C, before the
                # sentence-start search: an 8 KB prompt's anchors took 2.3 ms).
                if run:
                    _close(run, found)
                at_start, end = False, match.end()
                continue
            if end and _SENTENCE_END.search(line[end - 1 : match.start()]):
                at_start = True
            # A dotted or dashed identifier with digits (HAR-1101, v3.2) names one thing.
            identifier = _is_identifier(word)
            parts = [word] if identifier else re.split(r"[.-]", word)
            if compound and not identifier and "_" not in word and parts == [word]:
                # A name of one word: it may go on in the next ("Split View").
                name = _name(word, at_start)
                if name is None or line[end : match.start()] != " ":
                    _close(run, found)
                if name is not None:
                    run.append(name)
            else:
                _close(run, found)
                for part in parts:
                    name = _name(part, at_start)
                    if name is not None:
                        found.add(name)
            at_start, end = False, match.end()
        _close(run, found)
    return frozenset(found)


def _name(part: str, sentence_start: bool) -> frozenset[str] | None:
    """The name ``part`` of a word is, as terms (None: no name)."""
    if not _is_anchor(part, sentence_start):
        return None
    name = frozenset(t for t in analyzer.tokens(part) if t not in STOP_TERMS)
    return name if any(len(term) > 1 for term in name) else None


def _close(run: list[frozenset[str]], found: set[frozenset[str]]) -> None:
    """Add the names of consecutive capitalised words ``run`` to ``found`` as one, and empty
    it."""
    if run:
        found.add(frozenset().union(*run))
        run.clear()


def anchor_terms(names: Collection[frozenset[str]]) -> frozenset[str]:
    """The anchor terms of ``names`` (``anchor_names``): their terms of two characters or
    more (a lone digit of a version names nothing)."""
    return frozenset(term for name in names for term in name if len(term) > 1)


def held(names: Collection[frozenset[str]], terms: frozenset[str]) -> frozenset[str]:
    """The terms of the ``names`` that ``terms`` (an entry's) hold: every term of a name,
    or all but one of a name of three words or more that is not an identifier (a long name
    goes by a shorter one: "New York" for "New York City")."""
    found: set[str] = set()
    for name in names:
        missing = len(name - terms)
        if missing == 0:
            found |= name
        elif missing == 1 and len(name) >= 3 and not any(map(is_identifier_term, name)):
            found |= name & terms
    return frozenset(found)


def _is_identifier(word: str) -> bool:
    return word.isascii() and _has_letter(word) and _ASCII_DIGIT.search(word) is not None


# Checked in C for each word of a prompt: in ASCII, a letter is a character with two cases.
_ASCII_DIGIT = re.compile(r"[0-9]")


def _has_letter(ascii_word: str) -> bool:
    return ascii_word.lower() != ascii_word.upper()


# Capitalised by convention, not names: "on Friday evening" names no subject of a scope.
CALENDAR_WORDS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march
    april may june july august september october november december""".split()
)


def _is_anchor(word: str, sentence_start: bool) -> bool:
    if len(word) < 2 or not word.isascii() or not _has_letter(word):
        return False
    if word.lower() in CALENDAR_WORDS:
        return False
    if _is_identifier(word) or "_" in word:
        return True
    if word.isupper():
        return False
    if word[1:] != word[1:].lower():
        return True  # GraphQL, NamedTuple: an upper-case letter after the first
    return word[0].isupper() and not sentence_start


def is_identifier_term(term: str) -> bool:
    """Whether an anchor term is (part of) an identifier: a digit or an underscore in it
    (``HAR-1101``, ``cancel_at``). It names exactly one thing, however many entries hold it."""
    return any(char.isdigit() or char == "_" for char in term)


def picks_out(term: str, document_frequency: int, documents: int) -> bool:
    """Whether the anchor ``term``, held by ``document_frequency`` of a scope's
    ``documents``, singles entries out. An identifier always does (a ticket number, a
    function's name); a name does while few entries hold it: "Python" in a Python
    project's notes, or a speaker's name in their own chat, does not show that one of
    them answers."""
    if is_identifier_term(term):
        return True
    return document_frequency <= max(
        numbers.COMMON_ANCHOR_DOCUMENTS, numbers.COMMON_ANCHOR_SHARE * documents
    )


def readable(text: str) -> bool:
    """Whether the embedding model can read ``text``: most of its letters are Latin (the
    model's vocabulary is English). Text without letters is readable (numbers, symbols)."""
    if text.isascii():
        return True  # Every letter Latin, and checked in C: most entries (once per candidate).
    # A pack judges some 70 candidates, each prompt again: a Chinese entry's text cost
    # 32 us to count, its digest 1 us. Kept by digest, not by the text (which may be long).
    key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
    found = _readable_texts.get(key)
    if found is None:
        if len(_readable_texts) >= READABLE_KEPT:
            _readable_texts.clear()  # bounded; the next prompts fill it again
        found = _readable_texts[key] = _mostly_latin(text)
    return found


# Non-ASCII texts whose readability is kept (16-byte digests: under 1 MB).
READABLE_KEPT = 4096
_readable_texts: dict[bytes, bool] = {}


def _mostly_latin(text: str) -> bool:
    """Whether most of ``text``'s letters are Latin (``readable``, counted)."""
    letters = [char for char in text if char.isalpha()]
    latin = sum(1 for char in letters if char.isascii() or _is_latin(char))
    return latin >= numbers.READABLE_SHARE * len(letters)


@functools.lru_cache(maxsize=4096)
def _is_latin(char: str) -> bool:
    return unicodedata.name(char, "").startswith("LATIN")
