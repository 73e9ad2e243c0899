"""The detector (``powercontext.redaction``): what it replaces, what it leaves alone, and
that the hook and the server cut ``<private>`` spans alike. Pure: no database."""

import re
import string
import time
from re import _constants, _parser  # type: ignore[attr-defined]

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from powercontext import redaction
from powercontext.redaction import Redactions, clean_prompt, redact, strip_private
from tests.hooks.conftest import load_hook_module

from . import secret_samples as s

hook = load_hook_module()


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"export OPENAI_API_KEY={s.OPENAI_KEY}", s.OPENAI_KEY, "openai-api-key"),
        (f"aws_access_key_id = {s.AWS_KEY_ID}", s.AWS_KEY_ID, "aws-access-key-id"),
        (f"aws_secret_access_key = {s.AWS_SECRET}", s.AWS_SECRET, "aws-secret-key"),
        (f'AWS_SECRET_ACCESS_KEY="{s.AWS_SECRET}"', s.AWS_SECRET, "aws-secret-key"),
        (f"token {s.GITHUB_TOKEN} for the CI", s.GITHUB_TOKEN, "github-token"),
        (f"password={s.PASSWORD} then deploy", s.PASSWORD, "password"),
        (f'db_password: "{s.PASSWORD}"', s.PASSWORD, "password"),
        (f"postgres://admin:{s.URL_PASSWORD}@db.example.com/app", s.URL_PASSWORD, "url-password"),
        (f"the key:\n{s.PEM}\nthanks", s.PEM_BODY, "private-key"),
        (f"slack {s.SLACK_TOKEN}", s.SLACK_TOKEN, "slack-token"),
        (f"stripe {s.STRIPE_KEY}", s.STRIPE_KEY, "stripe-key"),
        (f"Authorization: Bearer {s.JWT}", s.JWT, "jwt"),
    ],
)
def test_each_kind_is_replaced_by_its_marker(text, secret, kind):
    result = redact(text)
    assert secret not in result.text
    assert f"[redacted:{kind}]" in result.text
    assert result.kinds.get(kind, 0) >= 1


def test_a_jwt_goes_whole_signature_included():
    result = redact(f"token {s.JWT} done")
    assert result.text == "token [redacted:jwt] done"


def test_a_private_key_goes_from_its_begin_line_to_its_end_line():
    result = redact(f"before\n{s.PEM}\nafter")
    assert result.text == "before\n[redacted:private-key]\nafter"


def test_the_five_kinds_of_the_issue_all_go():
    result = redact(s.FIVE_KINDS_PROMPT)
    for secret in s.FIVE_KINDS_SECRETS:
        assert secret not in result.text
    assert result.text.endswith("Why does the nightly import fail after the schema change?")
    assert set(result.kinds) >= {
        "openai-api-key",
        "aws-access-key-id",
        "aws-secret-key",
        "github-token",
        "password",
        "private-key",
    }


@pytest.mark.parametrize(
    "text",
    [
        "The password field must be required; my password is not in here.",
        "Password: see the vault",
        "password = get_password()",
        'password = "${DB_PASSWORD}"',
        "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the APCommandLineTool",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
        "Visit https://docs.example.com/path?query=1 for the API key rotation guide.",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert redact(text).text == text
    assert redact(text).count == 0


def test_redacting_twice_changes_nothing_more():
    once = redact(s.FIVE_KINDS_PROMPT)
    twice = redact(once.text)
    assert twice.text == once.text
    assert twice.count == 0


@given(st.text(max_size=300))
def test_redaction_is_idempotent_on_any_text(text):
    once = redact(text).text
    assert redact(once).text == once


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("a <private>x\ny</private> b", "a  b"),
        ("a <PRIVATE>unclosed to the end", "a "),
        ("<private></private>", ""),
        ("x</private>y<private>a</private><private>b</Private>c", "x</private>yc"),
        ("İ<private>a</private>b", "İb"),
        ("a<PRİVATE>b</private>", "a<PRİVATE>b</private>"),
        ("no tags at all", "no tags at all"),
    ],
)
def test_private_spans_are_cut(text, kept):
    assert strip_private(text).text == kept
    assert hook.strip_private(text) == kept


@given(st.lists(st.sampled_from(["a", "<private>", "</private>", "<PRIVATE>", "\n", "İ"])))
def test_the_hook_and_the_server_cut_the_same_spans(pieces):
    text = "".join(pieces)
    assert hook.strip_private(text) == strip_private(text).text


def test_clean_prompt_cuts_private_spans_and_secrets():
    assert clean_prompt(f"<private>{s.PASSWORD}</private>token {s.GITHUB_TOKEN}") == (
        "token [redacted:github-token]"
    )


def test_redactions_count_every_field_and_json_strings():
    redactions = Redactions()
    assert redactions.text(f"key {s.GITHUB_TOKEN}") == "key [redacted:github-token]"
    assert redactions.optional(None) is None
    assert redactions.json({"a": [f"x {s.STRIPE_KEY}", 3, None]}) == {
        "a": ["x [redacted:stripe-key]", 3, None]
    }
    assert redactions.as_payload() == {
        "count": 2,
        "kinds": {"github-token": 1, "stripe-key": 1},
    }


# -- cost: linear in the text whatever it holds (issue 38, item 4) ----------------------


def _patterns():
    """(name, compiled pattern) of every pattern the detector runs."""
    found = [
        (name, value)
        for name, value in vars(redaction).items()
        if isinstance(value, re.Pattern) and name != "_PRIVATE_SPAN"
    ]
    found += [(f"_VALUE_AFTER[{key!r}]", value) for key, value in redaction._VALUE_AFTER.items()]
    found += [(f"{kind} {regex.pattern[:20]}", regex) for kind, _, regex, _ in redaction._TOKENS]
    return found


def _repeats(tree):
    """Every repetition's (min, max) in a parsed pattern, nested ones included."""
    for op, argument in tree:
        if op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT):
            low, high, inner = argument
            yield low, high
            yield from _repeats(inner)
        elif op is _constants.SUBPATTERN:
            yield from _repeats(argument[-1])
        elif op is _constants.BRANCH:
            for branch in argument[1]:
                yield from _repeats(branch)
        elif op in (_constants.ASSERT, _constants.ASSERT_NOT):
            yield from _repeats(argument[1])
        elif op is _constants.ATOMIC_GROUP:
            yield from _repeats(argument)


@pytest.mark.parametrize(("name", "pattern"), _patterns(), ids=lambda v: str(v)[:40])
def test_every_pattern_is_bounded(name, pattern):
    """No repetition without an upper bound (the private-span cut, ``.*?`` up to its
    closing tag or the end, is the one exception: each span is read once). With a bound,
    one attempt reads at most that far, so a scan costs the text's length times it."""
    for _low, high in _repeats(_parser.parse(pattern.pattern, pattern.flags)):
        assert high != _constants.MAXREPEAT, name
        assert high <= 8192, name


def test_no_token_pattern_starts_with_a_look_behind():
    """A leading look-behind makes the engine try every position (25 times slower on
    prose than a literal first); the boundary is checked in Python instead."""
    for kind, _, regex, _ in redaction._TOKENS:
        assert not regex.pattern.startswith("(?<!"), kind


# Pieces the adversarial units are made of: keywords and their operators, provider
# prefixes, URL and flag punctuation, quotes and line breaks.
_PIECES = [
    "pwd", "pass", "password", "secret", "token", "api_key", "key", "auth", "_", "-", ".",
    "=", ":", ": ", "=>", ":=", '"', "'", "`", "(", "[", "\n", "\\\n", " ", "|",
    "://", "@", "a:b", "-p", "-u ", "--password ", "mysql ", "sshpass ", "machine ",
    "Authorization: ", "Bearer ", "Basic ", "ghp_", "github_pat_", "sk-", "sk-ant-",
    "AKIA", "ASIA", "AIza", "hf_", "npm_", "hvs.", "dop_v1_", "xoxb-", "eyJ", "Q~",
    "-----BEGIN PRIVATE KEY-----", "<password>", "</", "%4", "%41", "QUFB", "=", "&", ";",
    "?", "#", "$", "{", "<", ">", "!", "*", "+", ",", ")",
]  # fmt: skip
_ALPHABETS = [string.ascii_letters + string.digits, "0123456789abcdef", "QUFBQUFB+/=", "A"]


def _unit():
    keyword_runs = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join)
    near_matches = st.tuples(
        st.sampled_from(["ghp_", "sk-", "AKIA", "AIza", "hvs.", "xoxb-", "eyJ", "dapi"]),
        st.integers(min_value=0, max_value=60),
        st.sampled_from(["", " ", "=", "."]),
    ).map(lambda t: t[0] + "a1B2" * (t[1] // 4) + t[2])
    long_tokens = st.tuples(st.sampled_from(_ALPHABETS), st.sampled_from(["", " ", "\n"])).map(
        lambda t: t[0] * 50 + t[1]
    )
    return st.one_of(keyword_runs, near_matches, long_tokens)


def _cpu_ms(text):
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        redact(text)
        best = min(best, time.process_time() - started)
    return best * 1000


SMALL, LARGE = 1_000, 8_000


@settings(max_examples=60, deadline=None, phases=[Phase.explicit, Phase.generate])
@example("pwd_")
@example("password=")
@example("sk-")
@given(_unit())
def test_redaction_work_is_linear(unit):
    """Eight times the text costs about eight times the work, whatever it is made of: the
    ratio is measured in the same test (machine-independent), and a quadratic detector
    would show 64 (the one of issue 38 took 7.6 s on 8 KB of ``pwd_pwd_...``). The
    absolute figures are the bench's (``bench/redaction_bench.py --adversarial``)."""
    small = (unit * (SMALL // len(unit) + 1))[:SMALL]
    large = (unit * (LARGE // len(unit) + 1))[:LARGE]
    # Below a millisecond the clock's grain and the interpreter's warm-up dominate.
    ratio = max(_cpu_ms(large), 1.0) / max(_cpu_ms(small), 1.0 / 8)
    assert ratio < 24, (unit, ratio)
