"""What is never stored: credential-shaped strings and ``<private>`` spans.

Every write that keeps text a person or an agent sent (a captured prompt and its
metadata, a remembered or revised entry, an Experience proposal, a reason; through the
API, MCP or the admin alike) passes it through :meth:`Redactions.text`, one step:

1. a literal marker already in the text (``[redacted:password]`` typed or pasted) is
   escaped to ``[redacted\\:password]``, so a stored marker always means "this
   server took a secret out here" and the desk and the changes log can tell the two
   apart (:func:`escape_markers`);
2. ``<private>...</private>`` spans are cut (:func:`strip_private`; the hook cuts them
   too, before sending);
3. each credential is replaced by a typed marker, ``[redacted:aws-secret-key]``
   (:func:`redact`), and the write reports how many went, by kind.

What :func:`redact` finds:

- provider tokens by their fixed prefixes (``ghp_``, ``github_pat_``, ``sk-ant-``,
  ``AIza``, ``hf_``, ``hvs.``, ``AKIA``, ...): ``powercontext.redaction_rules``, the
  prefixes of gitleaks' rule set written so that each runs in linear time;
- a value assigned to a key that names a secret (``DB_PASSWORD=...``,
  ``"access_token": "..."``, ``api_token:`` in YAML, ``--password x``, a value on the
  line after its key, a string continued on the next line), unless the value is code
  (``form.cleaned_data['password']``), a template (``${DB_PASSWORD}``) or a stand-in
  (``changeme``, ``your-api-key``, ``sk_test_placeholder``);
- passwords in URLs (``scheme://user:pa$$w0rd!@host``, any character but a blank, ``/``,
  ``?`` and ``#``, as RFC 3986 has them), ``Authorization:`` headers and ``Bearer``
  tokens, ``curl -u user:pw``, ``mysql -pPW``, ``sshpass -p PW``, ``redis-cli -a PW``,
  ``docker login -p PW``, ``<password>...</password>``, PEM private keys;
- any of these inside a base64 or percent-encoded run (decoded once and searched
  again; the whole run goes).

Documented examples (AWS's ``AKIAIOSFODNN7EXAMPLE``, jwt.io's sample token) and
placeholders stay as they are: a text about code names secrets far more often than it
holds one, and a mangled line of code in Memory is a bug of its own.

Cost: every pattern is bounded and possessive behind a boundary (see
``redaction_rules``), and each step after them looks at each character a bounded number
of times, so redaction is linear in the text whatever it holds (``bench/redaction_bench.py
--adversarial`` prints the table; ``test_redaction_work_is_linear`` checks it).

detect-secrets (Yelp), a dependency, is still used for its template heuristic
(``is_templated_secret``); its patterns are not: several are super-linear on crafted
input (its keyword detector took 7.6 s on 8 KB of ``pwd_pwd_...``) and they miss most
of the formats above.
"""

import base64
import binascii
import bisect
import itertools
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from detect_secrets.filters.heuristic import is_templated_secret

from powercontext import redaction_rules as rules

MARKER_PREFIX = "[redacted:"
PRIVATE_KIND = "private"
# What a literal marker in the input becomes: visibly not a marker.
ESCAPED_MARKER_PREFIX = "[redacted\\:"


def marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


def _with_boundary(pattern: str) -> str:
    """``pattern`` with a look-behind just after its leading literal (``ghp_``, ``eyJ``):
    a match there must not follow a token character. Checked right after the literal, so
    the engine still finds the literal as fast as ``str.find``, and refuses an occurrence
    inside a longer run before it reads the run (``eyJeyJeyJ...`` is read once, not once
    per ``eyJ``)."""
    at = width = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\" and pattern[at + 1 : at + 2] in (".", "-", "/", "+"):
            step = 2
        elif char == "[":
            step = pattern.index("]", at) + 1 - at
        elif char.isalnum() or char in "_-~":
            step = 1
        else:
            break
        if pattern[at + step : at + step + 1] in ("{", "*", "+", "?"):
            break  # a repeated atom is not part of the literal
        at += step
        width += 1
    if not width:
        return pattern
    return pattern[:at] + rf"(?<![A-Za-z0-9_-][\s\S]{{{width}}})" + pattern[at:]


_TOKENS = tuple(
    (rule[0], rule[1], re.compile(_with_boundary(rule[2])), rule[3] if len(rule) == 4 else 0)
    for rule in rules.TOKEN_RULES
)
# A token starts where none of these stands just before it (``redaction_rules``).
_TOKEN_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")

# A key, its closing quote if quoted, and an assignment operator. The key's last
# characters must be those of a secret-naming word (the lookbehinds: a cheap filter,
# checked exactly in ``_key_kind``), so ``a=a=a=...`` does not reach Python code.
_KEY_ENDINGS = (
    "pass", "word", "pwd", "swd", "rase", "code", "cret", "oken", "key", "auth", "tial",
    "ials", "eña", "ena", "base", "pat",
)  # fmt: skip
_ASSIGNMENT = re.compile(
    r"(?<![\w.$])([A-Za-z_][\w.-]{0,63}+)"
    r"(?i:" + "|".join(f"(?<={ending})" for ending in _KEY_ENDINGS) + r")"
    r"([\"'`]?)[ \t]{0,8}+(:=|=>|==|=|:)[ \t]{0,8}+"
)
# The value after the operator: on the same line, or alone on the next one (YAML's
# ``|``/``>`` block, a shell ``\`` continuation, or nothing left on the key's line).


def _value_pattern(stops: str = "") -> re.Pattern[str]:
    """The value after the operator: on the same line, or alone on the next one (YAML's
    ``|``/``>`` block, a shell ``\\`` continuation, or nothing left on the key's line);
    quoted, or up to a blank (or one of ``stops``, where its context ends a value)."""
    return re.compile(
        r"(?:[|>][-+]?+[ \t]{0,8}+\r?\n[ \t]{0,32}+|\\?\r?\n[ \t]{0,32}+)?"
        r"\(?+[ \t]{0,8}+(?:\"([^\"\r\n]{1,512}+)\"|'([^'\r\n]{1,512}+)'|`([^`\r\n]{1,512}+)`"
        rf"|([^\s\"'`{re.escape(stops)}]{{1,512}}+))"
    )


_VALUE = _value_pattern()
# In a URL's query a value ends at ``&`` or ``#``; in a connection string, at ``;``.
_VALUE_AFTER = {"?": _value_pattern("&#"), "&": _value_pattern("&#"), ";": _value_pattern(";")}
# A quoted string continued on the next line (``"abc" \`` + ``"def"``, ``+``).
_CONTINUED = re.compile(
    r"[ \t]{0,8}+\+?+[ \t]{0,8}+\\?\r?\n[ \t]{0,32}+\+?+[ \t]{0,8}+"
    r"(?:\"([^\"\r\n]{1,512}+)\"|'([^'\r\n]{1,512}+)')"
)
# Code, not a value: a call, a subscript, an attribute path.
_CODE = re.compile(r"[A-Za-z_][\w.]{0,127}+[\[(]|[A-Za-z_]\w{0,63}+(?:\.[A-Za-z_]\w{0,63}+){1,8}+$")
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,63}+")
_SHELL_VARIABLE = re.compile(r"\$(?:[{(]|[A-Za-z_]\w{0,63}+$)")
_KEY_PARTS = re.compile(r"[_.\-]{1,64}+|(?<=[a-z0-9])(?=[A-Z])")

# ``scheme://user:password@host``: the password alone, any character but a blank and
# the URL delimiters (an ``@`` in it: up to the last one).
_URL_PASSWORD = re.compile(r"://([^\s:/?#@\"'<>]{0,128}+):([^\s/?#\"'<>]{1,256})@(?=[\w\[.-])")
# These two run over the lower-cased text (same offsets): a literal first is found fast.
_AUTHORIZATION = re.compile(
    r"authorization[\"']?[ \t]{0,8}+[:=,][ \t]{0,8}+[\"']?"
    r"(bearer|basic|token|digest|apikey|sso-key|key|otp)?+[ \t]{0,8}+"
    r"([A-Za-z0-9._~+/=:-]{8,4096}+)"
)
_BEARER = re.compile(r"bearer[ \t]{1,8}+([A-Za-z0-9._~+/-]{16,4096}+={0,2}+)")
# The flags below: the boundary before the ``-`` is checked by the caller (``_flag``).
_CURL_USER = re.compile(
    r"(?:-u|--user|--proxy-user)(?:[ \t]{1,8}+|=)[\"']?+[^\s:\"']{1,128}+"
    r":([^\s\"']{1,256}+)"
)
# ``-p`` flags, only on a line that names a tool taking a password that way.
_PASSWORD_FLAG = re.compile(
    r"-(?:p|a)(?:'([^'\r\n]{1,256}+)'|\"([^\"\r\n]{1,256}+)\"|([^\s\"'-][^\s]{0,255}+))"
)
_PASSWORD_FLAG_SPACED = re.compile(
    r"-(?:p|a)[ \t]{1,8}+(?:'([^'\r\n]{1,256}+)'|\"([^\"\r\n]{1,256}+)\""
    r"|([^\s\"'-][^\s]{0,255}+))"
)
# Tools that take a password as ``-pPW`` (MySQL's) or ``-p PW`` / ``-a PW``.
_PASSWORD_TOOLS = ("mysql", "mariadb")
_SPACED_PASSWORD_TOOLS = (
    "sshpass", "redis-cli", "docker login", "podman login", "login -u", "mongo",
)  # fmt: skip
# ``htpasswd -b[c] FILE USER PASSWORD``: the password comes last.
_HTPASSWD = re.compile(
    r"htpasswd[ \t]{1,8}+-[a-z]{0,8}b[a-z]{0,8}+[ \t]{1,8}+\S{1,256}+[ \t]{1,8}+\S{1,256}+"
    r"[ \t]{1,8}+(\S{1,256}+)"
)
_LONG_FLAG = re.compile(
    r"--(?i:password|passwd|pass|token|api-key|apikey|secret|client-secret|"
    r"auth-token|access-token)[ \t]{1,8}+(?:'([^'\r\n]{1,256}+)'|\"([^\"\r\n]{1,256}+)\""
    r"|([^\s\"'-][^\s]{0,255}+))"
)
# ``.netrc``: ``machine host login me password PW``.
_NETRC = re.compile(
    r"machine\s{1,16}+\S{1,256}+(?:\s{1,16}+login\s{1,16}+\S{1,256}+)?+"
    r"\s{1,16}+password\s{1,16}+(\S{1,256}+)"
)
_XML_SECRET = re.compile(r"<([A-Za-z_:][\w:.-]{0,63}+)>([^<>\s]{1,512}+)</\1>")
# Bounded, not possessive: the words before PRIVATE KEY are of its characters.
_PEM_BEGIN = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
)
_PEM_END = re.compile(
    r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY[A-Z ]{0,10}+-----|---- END SSH2[^\n]{0,40}+----"
)
# Runs that may be an encoding of a secret: base64 (16 characters or more), and
# anything between blanks holding a percent escape.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{16,8192}+={0,2}+(?![A-Za-z0-9+/=_-])")
_RUN = re.compile(r"[^\s\"'<>]{0,8192}+")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_PRIVATE_SPAN = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL | re.ASCII)
_MARKER = re.compile(r"\[redacted:[a-z0-9-]{1,64}+\]")
# Kinds that say where a secret stood rather than what it is.
_GENERIC = frozenset(("password", "secret", "url-password"))
ENCODED_KIND = "encoded-secret"


@dataclass(frozen=True)
class Redacted:
    """A text with its secrets replaced, and how many of each kind were."""

    text: str
    kinds: Mapping[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())


def _placeholder(value: str) -> bool:
    """A documented example or a stand-in, not a secret."""
    lowered = value.lower()
    return (
        lowered in rules.PLACEHOLDER_VALUES
        or value in rules.DOCUMENTED_SAMPLES
        or any(word in lowered for word in rules.PLACEHOLDER_WORDS)
        or len(set(lowered)) <= 2
        or any(_same_halves(value, separator) for separator in "/:")
    )


def _same_halves(value: str, separator: str) -> bool:
    """``guest:guest``, ``billing/billing``: a development default, user and password
    alike."""
    if value.count(separator) != 1:
        return False
    user, password = value.split(separator)
    return user == password


def _token_spans(text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    for kind, hint, regex, back in _TOKENS:
        if hint and hint not in lowered:
            continue
        group = 1 if regex.groups else 0
        for match in regex.finditer(text):
            start, end = match.span(group)
            start -= back
            if not back and start > 0 and text[start - 1] in _TOKEN_CHARACTERS:
                continue  # inside a longer run: not this token
            if not _placeholder(text[start:end]):
                yield start, end, kind


def _pem_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """From each ``BEGIN ... PRIVATE KEY`` line to its ``END`` line (or the end)."""
    position = 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        start = text.rfind("\n", 0, begin.start()) + 1
        end = _PEM_END.search(text, begin.end())
        if end is None:
            yield start, len(text), "private-key"
            return
        yield start, end.end(), "private-key"
        position = end.end()


def _key_kind(key: str) -> str | None:
    """The kind a value assigned to ``key`` is, or None: a key whose last word names a
    secret (``DB_PASSWORD``, ``apiToken``, ``x-api-key``; not ``password_min_length``,
    ``token_type`` or ``primary_key``)."""
    parts = [part.lower() for part in _KEY_PARTS.split(key) if part]
    if not parts:
        return None
    last = parts[-1]
    previous = parts[-2] if len(parts) > 1 else ""
    if last in rules.PASSWORD_WORDS:
        return "password"
    if last == "base" and previous == "key" and "secret" in parts:
        last, previous = "key", "secret"  # Rails' ``secret_key_base``
    if last in rules.SECRET_WORDS or (last == "key" and previous in rules.KEY_QUALIFIERS):
        return "aws-secret-key" if "aws" in parts and last == "key" else "secret"
    return None


def _value_is_secret(value: str, *, quoted: bool, colon: bool, spaced: bool) -> bool:
    if len(value) < 3 or _MARKER.fullmatch(value) or _placeholder(value):
        return False
    if value.startswith(ESCAPED_MARKER_PREFIX) or _SHELL_VARIABLE.match(value):
        return False
    if is_templated_secret(value) or value.startswith(("%(", "%s", "{{", "{%")):
        return False
    if value.isdigit() and len(value) < 6:
        return False
    if "test" in value.lower():
        return False  # a test fixture's value (``password='testpass123'``)
    if quoted:
        return True
    if _CODE.match(value):
        return False  # form.cleaned_data['password'], settings.SECRET_KEY
    if colon and (value.isalpha() or value.startswith(("!", "&", "*"))):
        return False  # "Password: see the vault", ``password: str``, a YAML tag or alias
    # ``password = new_password``: a variable, in code (spaces around ``=``).
    return not (spaced and _IDENTIFIER.fullmatch(value) and not any(c.isdigit() for c in value))


def _unquoted_end(value: str) -> str:
    """An unquoted value without a sentence's closing punctuation."""
    value = value.rstrip(".,;:")
    if value.endswith(")") and "(" not in value:
        value = value.rstrip(")")
    return value


def _keyword_spans(text: str) -> Iterator[tuple[int, int, str]]:
    """Values assigned to keys that name a secret. The search goes on after each value
    (kept or not), so no character is read as part of two values: a run of
    ``password=password=...`` costs its length, not its length times a value's."""
    position = 0
    while (match := _ASSIGNMENT.search(text, position)) is not None:
        position = match.end()
        kind = _key_kind(match.group(1))
        if kind is None:
            continue
        before = text[match.start(1) - 1] if match.start(1) else ""
        value_match = _VALUE_AFTER.get(before, _VALUE).match(text, match.end())
        if value_match is None:
            continue
        group = next(g for g in (1, 2, 3, 4) if value_match.group(g) is not None)
        value = value_match.group(group)
        start, end = value_match.span(group)
        quoted = group != 4
        if not quoted:
            value = _unquoted_end(value)
            end = start + len(value)
        position = max(position, end)
        spaced = text[match.start(3) - 1 : match.end(3) + 1].count(" ") == 2
        if not _value_is_secret(value, quoted=quoted, colon=match.group(3) == ":", spaced=spaced):
            continue
        if quoted:
            # The same string continued on the next line is the rest of the secret.
            while (continued := _CONTINUED.match(text, end + 1)) is not None:
                end = continued.end() - 1
            position = end + 1
        yield start, end, kind


def _flag(text: str, match: re.Match[str]) -> tuple[int, int, str] | None:
    """The value of a command-line flag ``match`` found, if it is a secret."""
    if match.start() > 0 and text[match.start() - 1] in _TOKEN_CHARACTERS:
        return None  # ``--no-p``, ``x-pass``: not the flag
    group = next(g for g in range(1, (match.re.groups or 0) + 1) if match.group(g) is not None)
    quoted = match.re.groups == 1 or group != match.re.groups
    if not _value_is_secret(match.group(group), quoted=quoted, colon=False, spaced=False):
        return None
    return *match.span(group), "password"


def _flag_spans(text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    """Passwords in command lines: ``curl -u user:pw``, ``mysql -pPW``, ``sshpass -p
    PW``, ``--password PW``."""
    found: list[tuple[int, int, str] | None] = []
    if "-u" in text or "--user" in text or "--proxy-user" in text:
        found.extend(_flag(text, match) for match in _CURL_USER.finditer(text))
    if "--" in text:
        found.extend(_flag(text, match) for match in _LONG_FLAG.finditer(text))
    for regex, tools in (
        (_PASSWORD_FLAG, _PASSWORD_TOOLS),
        (_PASSWORD_FLAG_SPACED, _SPACED_PASSWORD_TOOLS),
    ):
        for line_start, line_end in _lines_with(lowered, tools):
            found.extend(_flag(text, match) for match in regex.finditer(text, line_start, line_end))
    yield from (span for span in found if span is not None)


def _lines_with(lowered: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line holding one of ``words``, in order, once each."""
    starts = set()
    for word in words:
        at = lowered.find(word)
        while at != -1:
            start = lowered.rfind("\n", 0, at) + 1
            starts.add(start)
            end = lowered.find("\n", at)
            at = -1 if end == -1 else lowered.find(word, end)
    lines = []
    for start in sorted(starts):
        end = lowered.find("\n", start)
        lines.append((start, len(lowered) if end == -1 else end))
    return lines


def _structured_spans(text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    if "://" in text:
        for match in _URL_PASSWORD.finditer(text):
            user, password = match.group(1), match.group(2)
            if password != user and _value_is_secret(
                unquote(password), quoted=True, colon=False, spaced=False
            ):
                yield *match.span(2), "url-password"
    if "authorization" in lowered:
        for match in _AUTHORIZATION.finditer(lowered):
            value = text[match.start(2) : match.end(2)]
            after = text[match.end(2) : match.end(2) + 2]
            if match.group(1) is None and len(after) == 2 and after[0] == " " and after[1] != " ":
                continue  # a scheme of its own followed by its parameters
            if not _placeholder(value) and not _SHELL_VARIABLE.match(value):
                yield *match.span(2), "authorization"
    if "bearer" in lowered:
        for match in _BEARER.finditer(lowered):
            token = text[match.start(1) : match.end(1)]
            boundary = match.start() == 0 or text[match.start() - 1] not in _TOKEN_CHARACTERS
            if boundary and any(c.isdigit() for c in token) and not _placeholder(token):
                yield *match.span(1), "authorization"
    if "</" in text:
        for match in _XML_SECRET.finditer(text):
            kind = _key_kind(match.group(1).rsplit(":", 1)[-1])
            value = match.group(2)
            if kind and _value_is_secret(value, quoted=True, colon=False, spaced=False):
                yield *match.span(2), kind
    if "htpasswd" in lowered:
        for match in _HTPASSWD.finditer(lowered):
            value = text[match.start(1) : match.end(1)]
            if _value_is_secret(value, quoted=True, colon=False, spaced=False):
                yield *match.span(1), "password"
    if "machine" in lowered:
        for match in _NETRC.finditer(lowered):
            value = text[match.start(1) : match.end(1)]
            if _value_is_secret(value, quoted=True, colon=False, spaced=False):
                yield *match.span(1), "password"
    if "-" in text:
        yield from _flag_spans(text, lowered)
    if "PRIVATE KEY" in text:
        yield from _pem_spans(text)


# ASCII-only lower-casing keeps every offset (``str.lower`` may lengthen a character).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _direct_spans(text: str) -> list[tuple[int, int, str]]:
    lowered = text.translate(_ASCII_LOWER)
    spans = list(_token_spans(text, lowered))
    spans.extend(_structured_spans(text, lowered))
    if any(ending in lowered for ending in _KEY_ENDINGS):
        spans.extend(_keyword_spans(text))
    return spans


def _decoded(run: str) -> str | None:
    """A run's text once decoded (base64, or percent escapes), if it is text."""
    if _PERCENT_ESCAPE.search(run):
        return unquote(run)
    try:
        raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(c.isprintable() or c in "\n\t\r" for c in decoded)
    return decoded if printable >= 0.95 * len(decoded) else None


def _encoded_spans(text: str, found: list[tuple[int, int, str]]) -> Iterator[tuple[int, int, str]]:
    """Base64 and percent-encoded runs that hold a secret once decoded (decoded once:
    an encoding of an encoding is not looked into). A run already inside a detected span
    is not decoded again."""
    covered = sorted((start, end) for start, end, _ in found)
    starts = [start for start, _ in covered]
    # reach[i]: the farthest end of the spans covered[:i + 1] (so a lookup is a bisection).
    reach = list(itertools.accumulate((end for _, end in covered), max))
    runs: list[tuple[int, int]] = [m.span() for m in _BASE64_RUN.finditer(text)]
    if "%" in text:
        runs.extend(_percent_runs(text))
    for start, end in runs:
        at = bisect.bisect_right(starts, start) - 1
        if at >= 0 and reach[at] >= end:
            continue
        decoded = _decoded(text[start:end])
        if decoded is not None and decoded != text[start:end] and _direct_spans(decoded):
            yield start, end, ENCODED_KIND


def _percent_runs(text: str) -> list[tuple[int, int]]:
    """(start, end) of each run between blanks that holds a percent escape: found from
    the escapes, each run once (its start read on the reversed text)."""
    reversed_text = text[::-1]
    runs: list[tuple[int, int]] = []
    for escape in _PERCENT_ESCAPE.finditer(text):
        if runs and escape.start() < runs[-1][1]:
            continue
        end = _RUN.match(text, escape.start()).end()  # type: ignore[union-attr]
        back = _RUN.match(reversed_text, len(text) - escape.start()).end()  # type: ignore[union-attr]
        runs.append((len(text) - back, end))
    return runs


def _spans(text: str) -> list[tuple[int, int, str]]:
    spans = _direct_spans(text)
    spans.extend(_encoded_spans(text, spans))
    return spans


def redact(text: str) -> Redacted:
    """``text`` with every detected credential replaced by ``[redacted:<kind>]``.

    Overlapping detections are merged (the earliest, then the longest, names the kind;
    of two alike, a vendor's token rather than a generic password); a marker already in
    the text is left alone, so redacting twice changes nothing.
    """
    spans = sorted(_spans(text), key=lambda span: (span[0], -span[1], span[2] in _GENERIC))
    if not spans:
        return Redacted(text)
    markers = [m.span() for m in _MARKER.finditer(text)]
    marker_starts = [start for start, _ in markers]
    out: list[str] = []
    kinds: Counter[str] = Counter()
    position = 0
    for start, end, kind in spans:
        if end <= position:
            continue  # inside a span already replaced
        at = bisect.bisect_right(marker_starts, start) - 1
        if at >= 0 and end <= markers[at][1]:
            continue  # inside a marker
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


def escape_markers(text: str, carried: str | None = None) -> tuple[str, int]:
    """``text`` with each literal ``[redacted:kind]`` in it written
    ``[redacted\\:kind]``, and how many were: what a write does before it redacts, so
    that a marker in stored text is always one this server put there. A revision keeps
    the markers of the version it revises (``carried``: as many of each as that one
    holds), which the server did put there."""
    if MARKER_PREFIX not in text:
        return text, 0
    kept = Counter(m.group() for m in _MARKER.finditer(carried or ""))
    escaped = 0

    def escape(match: re.Match[str]) -> str:
        nonlocal escaped
        if kept[match.group()] > 0:
            kept[match.group()] -= 1
            return match.group()
        escaped += 1
        return ESCAPED_MARKER_PREFIX + match.group()[len(MARKER_PREFIX) :]

    return _MARKER.sub(escape, text), escaped


def clean_prompt(text: str) -> str:
    """A prompt as the server may look at it: no ``<private>`` span, no secret. What
    prepare searches with (so a private or secret string is never a search term, and a
    prompt matches its own capture in the journal)."""
    return redact(strip_private(escape_markers(text)[0]).text).text


class Redactions:
    """What one write redacted, over all its fields: ``kinds`` counts the markers put in
    by kind (``private``: the ``<private>`` spans cut), ``escaped`` the literal markers
    that were already in the input (escaped, not counted as redactions)."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.escaped = 0

    def text(self, value: str, carried: str | None = None) -> str:
        """The one step every write runs on a text it keeps: literal markers escaped
        (but those of ``carried``, the version a revision revises), ``<private>`` spans
        cut, secrets replaced."""
        value, escaped = escape_markers(value, carried)
        self.escaped += escaped
        return self.stored(self.private(value))

    def stored(self, value: str) -> str:
        """A text already stored (by this server, or before redaction existed): secrets
        replaced, its markers left as they are (``manage.py redact_secrets``)."""
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
        """A JSON value with every string in it (keys too) through :meth:`text`.
        Iterative: a value nested deeper than Python's recursion limit is no error."""
        return map_json_strings(value, self.text)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())

    def as_payload(self) -> dict[str, Any]:
        return redaction_payload(self.kinds)


def map_json_strings(value: Any, change: Any) -> Any:
    """``value`` (parsed JSON: dicts, lists, scalars) with ``change`` applied to every
    string in it, keys too, in document order; without recursion, so any depth works."""
    if not isinstance(value, dict | list):
        return change(value) if isinstance(value, str) else value
    root: list[Any] = [None]
    # (source container, target container, key or index in the target's parent)
    slots: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while slots:
        source, parent, slot = slots.pop()
        if isinstance(source, dict):
            target: Any = {}
            parent[slot] = target
            items = [(change(key), item) for key, item in source.items()]
            # Keys keep their order: reserve each in order, fill as they are reached.
            for key, _ in items:
                target[key] = None
            for key, item in reversed(items):
                slots.append((item, target, key))
        elif isinstance(source, list):
            target = [None] * len(source)
            parent[slot] = target
            for index in range(len(source) - 1, -1, -1):
                slots.append((source[index], target, index))
        else:
            parent[slot] = change(source) if isinstance(source, str) else source
    return root[0]


def redaction_payload(kinds: Mapping[str, int]) -> dict[str, Any]:
    """The ``redacted`` object of a write's answer: ``{"count": N, "kinds": {kind: n}}``."""
    return {"count": sum(kinds.values()), "kinds": dict(sorted(kinds.items()))}
