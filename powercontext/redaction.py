"""What is never stored: credential-shaped strings and ``<private>`` spans.

Every write that keeps text a person or an agent sent (a captured prompt, a remembered or
revised entry, an Experience proposal, a reason) passes it through :func:`redact` first:
each credential is replaced by a typed marker, ``[redacted:aws-secret-key]``, and the
caller reports how many went (``Redactions``). ``<private>...</private>`` spans are cut
from a captured prompt by :func:`strip_private` (the hook cuts them too, before sending).

The detectors are detect-secrets' (Yelp, the reference scanner behind many pre-commit
set-ups): its vendor-prefixed token plugins (AWS key ids and secret keys, OpenAI, GitHub,
GitLab, Slack, Stripe, JWT, PEM private keys, credentials in URLs, SendGrid, Twilio, npm,
PyPI, ...) and its keyword detector (``password = ...``, ``api_key: "..."``). Their
compiled patterns are used directly, over the whole text, with no per-call settings or
plugin setup: detect-secrets' scan machinery (files, baselines, filters read from global
settings, verification over the network) is for repositories, not for a request path.

Left out on purpose, each for a reason:

- the entropy plugins (``Base64HighEntropyString``, ``HexHighEntropyString``): a prompt
  about code is full of commit hashes, digests and base64 data, all "high entropy";
- ``IPPublicDetector``: an address is not a credential;
- ``ArtifactoryDetector``: its password pattern (``AP`` + a hex digit + 8 characters)
  matches ordinary CamelCase identifiers such as ``APCommandLineTool``;
- the IBM, Cloudant and Softlayer detectors: keyword-and-hex heuristics the keyword
  detector already covers, and the slowest of the set.

Where a plugin's match is not the whole secret, the span is widened structurally: a PEM
header runs to its ``END`` line, a JWT to the end of its signature, and the keyword
detector's unquoted value stops at the first blank (its pattern runs to the end of the
line, which in prose would take the rest of the sentence). Markers are never redacted
again, so :func:`redact` is idempotent.
"""

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from detect_secrets.filters.heuristic import (
    is_prefixed_with_dollar_sign,
    is_templated_secret,
)
from detect_secrets.plugins import keyword
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

MARKER_PREFIX = "[redacted:"
PRIVATE_KIND = "private"


def marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    # The group that is the secret (0: the whole match).
    group: int = 0
    # A literal every match contains, lower-cased: a text without it is not searched
    # (``in`` on the lowered text costs microseconds; some of these regexes cost a
    # millisecond on 8,000 characters of prose).
    hint: str = ""


def _patterns() -> tuple[_Pattern, ...]:
    aws_key_id, aws_secret = AWSKeyDetector.denylist
    simple = (
        ("openai-api-key", OpenAIDetector),
        ("github-token", GitHubTokenDetector),
        ("gitlab-token", GitLabTokenDetector),
        ("slack-token", SlackDetector),
        ("stripe-key", StripeDetector),
        ("sendgrid-key", SendGridDetector),
        ("twilio-key", TwilioKeyDetector),
        ("azure-storage-key", AzureStorageKeyDetector),
        ("discord-token", DiscordBotTokenDetector),
        ("mailchimp-key", MailchimpDetector),
        ("pypi-token", PypiTokenDetector),
        ("square-oauth-token", SquareOAuthDetector),
        ("telegram-token", TelegramBotTokenDetector),
        ("jwt", JwtTokenDetector),
        ("private-key", PrivateKeyDetector),
    )
    found = [
        _Pattern("aws-access-key-id", aws_key_id),
        _Pattern("aws-secret-key", aws_secret, 1, "aws"),
        # ``scheme://user:password@host``: the password only.
        _Pattern("url-password", BasicAuthDetector.denylist[0], 1, "://"),
        # ``//registry/:_authToken=...``: the token only.
        _Pattern("npm-token", NpmDetector.denylist[0], 1, "_authtoken"),
    ]
    for kind, plugin in simple:
        found.extend(
            _Pattern(kind, regex, hint=_HINTS.get(regex.pattern, "")) for regex in plugin.denylist
        )
    return tuple(found)


# The literal each of the slower patterns requires (checked by the tests: every match
# of the pattern contains it).
_HINTS = {
    SlackDetector.denylist[0].pattern: "xox",
    SlackDetector.denylist[1].pattern: "hooks.slack.com",
    GitLabTokenDetector.denylist[1].pattern: "gr1348941",
    MailchimpDetector.denylist[0].pattern: "-us",
    TelegramBotTokenDetector.denylist[0].pattern: ":",
    DiscordBotTokenDetector.denylist[0].pattern: ".",
    StripeDetector.denylist[0].pattern: "k_live_",
    SendGridDetector.denylist[0].pattern: "sg.",
    PrivateKeyDetector.denylist[3].pattern: "begin pgp",
}


_PATTERNS = _patterns()
# The keyword detector's assignment forms, with the group that holds the value: ``k = v``
# (quotes optional), ``k: v``, ``k := v`` and ``k => "v"``. Its keywords are lower-case,
# so the patterns run case-sensitively over the ASCII-lowered line (five times faster
# than its case-insensitive ones; offsets are the same). Its C-style ``k "v";`` form is
# left out: rare in a prompt, and the slowest of them.
_COLON_FORM = re.compile(keyword.FOLLOWED_BY_COLON_REGEX.pattern)
_KEYWORD_PATTERNS = tuple(
    (regex if regex is _COLON_FORM else re.compile(regex.pattern), group)
    for regex, group in (
        (keyword.FOLLOWED_BY_EQUAL_SIGNS_REGEX, 5),
        (_COLON_FORM, 4),
        (keyword.FOLLOWED_BY_COLON_EQUAL_SIGNS_REGEX, 4),
        (keyword.FOLLOWED_BY_ARROW_FUNCTION_SIGN_QUOTES_REQUIRED_REGEX, 4),
    )
)
# A cheap first pass: the keyword patterns are the costly ones, and only a line that names
# one of their keywords can match them (found with str.find on the lowered text: the
# keyword regex itself, case-insensitive, takes 4 ms to scan 8,000 characters).
_KEYWORD_HINTS = ("key", "pass", "pwd", "secret", "contrase")
_PASSWORD_WORDS = ("pass", "pwd", "contrase")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|---- END SSH2[^\n]*----")
_JWT_TAIL = re.compile(r"[A-Za-z0-9_=+/.-]*")
_PRIVATE_SPAN = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL | re.ASCII)
_MARKER = re.compile(r"\[redacted:[a-z0-9-]+\]")
# detect-secrets' indirect reference (``heuristic.is_indirect_reference``), applied to the
# value alone: over a whole line its pattern costs 50 microseconds a line.
_INDIRECT = re.compile(r"[\w.-]+[\[\(][^\v]*[\]\)]")
# Kinds that say where a secret stood rather than what it is.
_GENERIC = frozenset(("password", "secret", "url-password"))


@dataclass(frozen=True)
class Redacted:
    """A text with its secrets replaced, and how many of each kind were."""

    text: str
    kinds: Mapping[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())


# ASCII-only lower-casing keeps every offset (``str.lower`` may lengthen a character).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _spans(text: str) -> Iterator[tuple[int, int, str]]:
    lowered = text.translate(_ASCII_LOWER)
    for pattern in _PATTERNS:
        if pattern.hint and pattern.hint not in lowered:
            continue
        for match in pattern.regex.finditer(text):
            start, end = match.span(pattern.group)
            if start == end:
                continue
            if pattern.kind == "private-key":
                start = text.rfind("\n", 0, start) + 1  # the whole ``-----BEGIN`` line
                closing = _PEM_END.search(text, end)
                end = closing.end() if closing else len(text)
            elif pattern.kind == "jwt":
                end = _JWT_TAIL.match(text, end).end()  # type: ignore[union-attr]
            yield start, end, pattern.kind
    yield from _keyword_spans(text, lowered)


def _hinted_lines(text: str, lowered: str) -> list[tuple[int, str, str, list[int]]]:
    """(offset, line, lowered line, where in it a hint stands) of each line that holds a
    keyword hint, in order."""
    found: dict[int, list[int]] = {}
    for hint in _KEYWORD_HINTS:
        at = lowered.find(hint)
        while at != -1:
            found.setdefault(text.rfind("\n", 0, at) + 1, []).append(at)
            at = lowered.find(hint, at + 1)
    lines = []
    for start in sorted(found):
        end = text.find("\n", start)
        stop = len(text) if end == -1 else end
        hints = [at - start for at in found[start]]
        lines.append((start, text[start:stop], lowered[start:stop], hints))
    return lines


# How far before a hint a keyword may start ("database_pass": 9 characters before
# "pass"). The keyword patterns are tried only there, with ``match``: scanning a whole
# line of prose with them costs about 0.2 ms a line.
_KEYWORD_REACH = 9


def _keyword_spans(text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    for offset, line, lowered_line, hints in _hinted_lines(text, lowered):
        starts = sorted(
            {at for hint in hints for at in range(max(0, hint - _KEYWORD_REACH), hint + 1)}
        )
        found = [
            (regex, group, match)
            for regex, group in _KEYWORD_PATTERNS
            for at in starts
            if (match := regex.match(lowered_line, at)) is not None
        ]
        for regex, group, match in found:
            start, end = match.span(group)
            value = line[start:end]
            quoted = start > 0 and line[start - 1] in "'\"`"
            # ``password = get_password(user)`` names where a secret comes from.
            if not quoted and _INDIRECT.match(value):
                continue
            if not quoted:
                # Unquoted: the value ends at the first blank, and a sentence's closing
                # punctuation is not part of it.
                value = value.split(None, 1)[0] if value.strip() else ""
                value = value.rstrip(".,;:)")
                end = start + len(value)
            if (
                not value
                # "Password: see the vault" is prose, not a credential.
                or (regex is _COLON_FORM and not quoted and value.isalpha())
                or _MARKER.fullmatch(value)
                or is_templated_secret(value)
                or is_prefixed_with_dollar_sign(value)
            ):
                continue
            name = match.group(1).lower()
            kind = "password" if any(w in name for w in _PASSWORD_WORDS) else "secret"
            if kind == "secret" and "aws" in lowered_line[: match.start(group)]:
                kind = "aws-secret-key"
            yield offset + start, offset + end, kind


def redact(text: str) -> Redacted:
    """``text`` with every detected credential replaced by ``[redacted:<kind>]``.

    Overlapping detections are merged (the earliest, then the longest, names the kind;
    of two alike, a vendor's token rather than a generic password); a marker already in
    the text is left alone, so redacting twice changes nothing.
    """
    spans = sorted(_spans(text), key=lambda span: (span[0], -span[1], span[2] in _GENERIC))
    if not spans:
        return Redacted(text)
    markers = [(m.start(), m.end()) for m in _MARKER.finditer(text)]
    out: list[str] = []
    kinds: Counter[str] = Counter()
    position = 0
    for start, end, kind in spans:
        if end <= position:
            continue  # inside a span already replaced
        if any(m_start <= start and end <= m_end for m_start, m_end in markers):
            continue
        start = max(start, position)
        out.append(text[position:start])
        out.append(marker(kind))
        kinds[kind] += 1
        position = end
    out.append(text[position:])
    return Redacted("".join(out), dict(kinds))


def strip_private(text: str) -> Redacted:
    """``text`` without its ``<private>...</private>`` spans (case-insensitive, across
    lines; an unclosed one runs to the end). The hook does the same before sending."""
    stripped, count = _PRIVATE_SPAN.subn("", text)
    return Redacted(stripped, {PRIVATE_KIND: count} if count else {})


def clean_prompt(text: str) -> str:
    """A prompt as the server may look at it: no ``<private>`` span, no secret. What
    capture stores, and what prepare searches with (so a private or secret string is
    never a search term, and a prompt matches its own capture in the journal)."""
    return redact(strip_private(text).text).text


class Redactions:
    """What one write redacted, over all its fields: ``as_payload()`` is the answer's
    ``redacted`` object, ``{"count": N, "kinds": {kind: n}}``."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()

    def text(self, value: str) -> str:
        result = redact(value)
        self.kinds.update(result.kinds)
        return result.text

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def private(self, value: str) -> str:
        result = strip_private(value)
        self.kinds.update(result.kinds)
        return result.text

    def json(self, value: Any) -> Any:
        """A JSON value with every string in it (keys too) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(item) for item in value]
        if isinstance(value, dict):
            return {self.text(key): self.json(item) for key, item in value.items()}
        return value

    @property
    def count(self) -> int:
        return sum(self.kinds.values())

    def as_payload(self) -> dict[str, Any]:
        return redaction_payload(self.kinds)


def redaction_payload(kinds: Mapping[str, int]) -> dict[str, Any]:
    """The ``redacted`` object of a write's answer: ``{"count": N, "kinds": {kind: n}}``."""
    return {"count": sum(kinds.values()), "kinds": dict(sorted(kinds.items()))}
