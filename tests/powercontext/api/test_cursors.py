"""Page cursors are client input: a forged one is a 422 on ``cursor``, never a 500.

A cursor is base64 JSON. Its values reach queries and the rendered answer, so a string
that is not Unicode text (a lone surrogate, which plain ``json.loads`` accepts) must be
refused while decoding, by the same strict rules as a request body.
"""

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import error_code, error_fields
from tests.experience.conftest import SOURCE, capture_source, proposal

pytestmark = pytest.mark.django_db

SCOPE = "scope-a"
LISTS = {
    "memory": "/v1/memory/entries/list",
    "candidates": "/v1/artifact-candidates/list",
}


def token_of(raw_json: str) -> str:
    """A cursor as a server would issue it, from JSON text written by hand."""
    return base64.urlsafe_b64encode(raw_json.encode("utf-8")).decode().rstrip("=")


def values_of(token: str):
    return json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


@pytest.fixture
def issued(api, remember):
    """A real next_cursor of each list, on a scope with two rows in each."""
    for text in ("first note", "second note"):
        remember(text, scope_id=SCOPE)
    capture_source(SCOPE, SOURCE)
    for lesson in ("First lesson.", "Second lesson."):
        api.ok(
            "/v1/experience/propose",
            {"scope_id": SCOPE, "proposal": proposal(lesson), "source_refs": [SOURCE]},
            status=201,
        )
    return {
        name: api.ok(path, {"scope_id": SCOPE, "limit": 1})["next_cursor"]
        for name, path in LISTS.items()
    }


# Where each list's cursor keeps the id it resumes after: memory [revision, entry id,
# include_inactive], candidates [filters, created_at, candidate id].
AFTER_ID = {"memory": 1, "candidates": 2}


def with_lone_surrogate(name: str, token: str) -> str:
    """The issued cursor with its resume id replaced by a lone surrogate; json.dumps
    writes it as the escape ``\\ud800``, exactly as a forger would."""
    values = values_of(token)
    values[AFTER_ID[name]] = "\ud800"
    return token_of(json.dumps(values))


@pytest.mark.parametrize("name", list(LISTS))
def test_issued_cursor_still_pages(api, issued, name):
    page = api.ok(LISTS[name], {"scope_id": SCOPE, "limit": 1, "cursor": issued[name]})
    assert page["next_cursor"] is None


@pytest.mark.parametrize("name", list(LISTS))
def test_lone_surrogate_in_a_cursor_is_422_on_cursor(api, issued, name):
    forged = with_lone_surrogate(name, issued[name])
    assert "\\ud800" in base64.urlsafe_b64decode(forged + "==").decode()
    response = api.post(LISTS[name], {"scope_id": SCOPE, "limit": 1, "cursor": forged})
    assert response.status_code == 422, response.content
    assert error_code(response) == "invalid_request"
    assert error_fields(response) == ["cursor"]


@pytest.mark.parametrize(
    "raw",
    [
        "[NaN]",
        '[1, "a", Infinity]',
        '{"a": 1, "a": 2}',
        "[" * 100_000,
        '["\\udfff"]',
    ],
)
@pytest.mark.parametrize("name", list(LISTS))
def test_cursor_json_is_as_strict_as_a_body(api, name, raw):
    response = api.post(LISTS[name], {"scope_id": SCOPE, "cursor": token_of(raw)})
    assert response.status_code == 422, response.content
    assert error_fields(response) == ["cursor"]


def test_invalid_utf8_in_a_cursor_is_422(api):
    token = base64.urlsafe_b64encode(b'[1, "\xff", false]').decode()
    response = api.post(LISTS["memory"], {"scope_id": SCOPE, "cursor": token})
    assert response.status_code == 422
    assert error_fields(response) == ["cursor"]


# Texts, often holding lone surrogates: st.text() leaves them out by default, and an
# alphabet that unites them with other characters loses them again (Hypothesis merges
# character strategies), so they are spliced in.
_SURROGATES = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2)
_TEXTS = st.text(max_size=12) | st.tuples(
    st.text(max_size=5), _SURROGATES, st.text(max_size=5)
).map("".join)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXTS
)
# st.recursive draws mostly containers; the scalars are offered on their own as well.
_JSON_VALUES = _SCALARS | st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXTS, inner, max_size=4),
    max_leaves=12,
)
# Cursor fields are mostly strings, so a replacement is a string half of the time.
_REPLACEMENTS = _TEXTS | _JSON_VALUES
_CURSORS = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40).map(lambda raw: base64.urlsafe_b64encode(raw).decode()),
    _JSON_VALUES.map(lambda value: token_of(json.dumps(value))),
    st.lists(_JSON_VALUES, min_size=3, max_size=3).map(lambda value: token_of(json.dumps(value))),
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=st.sampled_from(list(LISTS)), data=st.data())
def test_no_cursor_is_a_server_error(api, issued, name, data):
    # Half of the cursors are an issued one with one value replaced: only those get past
    # the shape checks to the values the queries and the answer use.
    if data.draw(st.booleans(), label="mutate issued"):
        values = values_of(issued[name])
        values[data.draw(st.integers(0, len(values) - 1), label="at")] = data.draw(
            _REPLACEMENTS, label="value"
        )
        cursor = token_of(json.dumps(values))
    else:
        cursor = data.draw(_CURSORS, label="cursor")
    response = api.post(LISTS[name], {"scope_id": SCOPE, "limit": 1, "cursor": cursor})
    assert response.status_code in (200, 422), response.content
    if response.status_code == 422:
        assert error_code(response) == "invalid_request"
