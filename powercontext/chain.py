"""The hash chain: the kernel's one primitive for a journal whose links cannot be dropped,
reordered or altered without a check saying so.

A chain is a run of links at places 1, 2, 3 ... (per key: an artifact, a scope), each
carrying the hash of the link before it (:data:`GENESIS_HASH` for the first) and its own
hash, computed over that previous hash and the link's canonical body under a domain tag
(:meth:`Chain.link`). Three journals are chains: the artifact revisions
(``powercontext.artifacts``), the source journal (``powercontext.sources``) and the
redaction log (``powercontext.redaction_log``); ``check_integrity`` and the archive's
import verify each with the same walk (:class:`Walk`).

The bodies are laid out as they were when each chain was first written (the revisions'
differs from the two later ones), so every hash stored so far still recomputes: a
change of layout would need a new domain tag and a migration of every stored hash.
Imports nothing of the product: the tables the chains live in are their owners'.
"""

import hashlib
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import rfc8785

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    """RFC 8785 (JCS) canonical JSON, as text."""
    return rfc8785.dumps(value).decode("utf-8")


def tagged_sha256(domain: bytes, canonical: str) -> str:
    return hashlib.sha256(domain + canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Chain:
    """One kind of chain, named by its domain tag. A link's body is the canonical JSON
    array of the previous hash and the link's fields, in the order its owner names them
    (the source journal, the redaction log)."""

    domain: bytes

    def body(self, previous_hash: str, fields: tuple[Any, ...]) -> bytes:
        return canonical_json([previous_hash, *fields]).encode("utf-8")

    def link(self, previous_hash: str, *fields: Any) -> str:
        """The hash of a link chained to ``previous_hash`` holding ``fields``."""
        return hashlib.sha256(self.domain + self.body(previous_hash, fields)).hexdigest()


@dataclass(frozen=True)
class ContentChain(Chain):
    """A chain whose one field is a text already canonical (the artifact revisions'
    content, canonical JSON as stored), laid out as the first chain was: the previous
    hash, a NUL, the text."""

    def body(self, previous_hash: str, fields: tuple[Any, ...]) -> bytes:
        (content,) = fields
        text: str = content
        return previous_hash.encode("ascii") + b"\x00" + text.encode("utf-8")


def next_link(last: tuple[int, str] | None) -> tuple[int, str]:
    """(place, previous hash) of the link to append after ``last``, the chain's latest
    (place, hash), or None when the chain is empty."""
    return (1, GENESIS_HASH) if last is None else (last[0] + 1, last[1])


@dataclass(frozen=True)
class Step:
    """What :meth:`Walk.step` found of one link: the place it should hold (``expected``),
    whether it holds it, whether it names the hash of the link before it, and whether it
    starts its chain (the first link read of its key)."""

    expected: int
    in_place: bool
    linked: bool
    first: bool


K = TypeVar("K", bound=Hashable)


class Walk(Generic[K]):
    """The verify walk over links read in chain order (by key, then by place). Each link
    must hold the next place and name the previous link's hash; whether its own hash
    recomputes is its chain's to say (:meth:`Chain.link`, and for an erased row what its
    redaction record left). The walk goes on past a wrong link, so one check reports
    every problem; a caller that stops at the first (the archive's import) simply
    stops."""

    def __init__(self) -> None:
        # The key of the chain being walked (None before the first link), and the place
        # of the last link walked: where that chain ends so far.
        self.key: K | None = None
        self.last = 0
        self._expected = 1
        self._previous = GENESIS_HASH

    def step(self, key: K, place: int, previous_hash: str, own_hash: str) -> Step:
        first = self.key is None or key != self.key
        if first:
            self.key, self._expected, self._previous = key, 1, GENESIS_HASH
        found = Step(
            expected=self._expected,
            in_place=place == self._expected,
            linked=previous_hash == self._previous,
            first=first,
        )
        self._expected, self._previous, self.last = place + 1, own_hash, place
        return found
