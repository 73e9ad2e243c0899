"""Opaque page cursors: a JSON list of values in unpadded URL-safe base64.

Each list operation keeps its own cursor fields and checks them in ``parse``; anything
wrong with a token, from bad base64 to a field of the wrong type, is the same 422. A
token is client input, so its JSON is decoded by the request bodies' strict rules (valid
UTF-8, no NaN, no lone surrogates, no duplicate keys): a value that could not be encoded
again (``"\\ud800"``) must fail here, not later in a query or in the answer.
"""

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any, TypeVar

from powercontext.api.parsers import loads_strict
from powercontext.exceptions import InvalidRequest

T = TypeVar("T")


def encode_cursor(values: list[Any]) -> str:
    raw = json.dumps(values)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(token: str, parse: Callable[[list[Any]], T]) -> T:
    """``parse`` of the token's values; it raises ValueError (or TypeError) for values
    that are no cursor of its operation."""
    try:
        padded = token + "=" * (-len(token) % 4)
        values = loads_strict(base64.urlsafe_b64decode(padded))
        if not isinstance(values, list):
            raise ValueError(token)
        return parse(values)
    except (ValueError, TypeError, OverflowError, RecursionError, binascii.Error) as error:
        raise InvalidRequest("cursor", "Invalid cursor.") from error
