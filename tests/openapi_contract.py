"""Every response the Django test client receives is checked against the committed OpenAPI
document (openapi/powercontext.yaml), as Zulip's test suite does: its status must be one
the document gives for that path and method, and its JSON body must match that status's
schema. A response that does not fails the test that received it.

Registered from tests/conftest.py. It wraps ``django.test.Client.request``, which the
``client`` fixture, ``tests.conftest.ApiClient`` and DRF's ``APIClient`` all go through.
Requests sent to real servers with httpx are not checked: the client tests' servers answer
wrong on purpose.

Schemas are OpenAPI 3.0 (``nullable``), so they are checked with openapi-schema-validator,
the python-openapi project's jsonschema dialect for it (the validator openapi-core uses).
"""

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.test import client as django_client
from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

DOCUMENT = Path(__file__).resolve().parents[1] / "openapi" / "powercontext.yaml"
_DOCUMENT_URI = "urn:powercontext:openapi"

# Paths outside the API, which the document does not describe: the pages for people, the
# schema and its viewer, the Prometheus text, the MCP tools. Anything else not in the document
# fails, so a new endpoint is documented or listed here.
UNDOCUMENTED_PREFIXES = ("/admin/", "/api/schema/", "/api/docs/", "/static/", "/metrics", "/mcp")
UNDOCUMENTED_PATHS = frozenset({"/"})

_UNKNOWN_PATH_STATUSES = frozenset({404})
_UNKNOWN_METHOD_STATUSES = frozenset({401, 403, 405})

EXEMPT_MARKER = "openapi_unchecked"


class ContractViolation(AssertionError):
    """A response the committed OpenAPI document does not allow."""


@dataclass(frozen=True)
class Exchange:
    method: str
    path: str
    status: int
    content_type: str
    body: bytes
    # The request's Host or Origin is foreign (``server.origin_policy``): every route
    # answers such a request 403 before any view runs, which the operations do not list.
    foreign: bool = False


@cache
def _document() -> dict[str, Any]:
    return _closed(_nullable_refs(yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))))


def _closed(node: Any) -> Any:
    """Every object the document lists the members of, closed to others: a client
    generated from the contract refuses a member it does not know (pydantic's
    ``extra="forbid"``, the compared reference's own client), so a response that carries
    one fails here, as it fails there. An object that says what else it holds
    (``additionalProperties``, a map such as ``metadata``) keeps its say."""
    if isinstance(node, list):
        return [_closed(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _closed(value) for key, value in node.items()}
    if "properties" in node and "additionalProperties" not in node:
        node["additionalProperties"] = False
    return node


def _nullable_refs(node: Any) -> Any:
    """drf-spectacular writes a nullable reference as ``{allOf: [$ref], nullable: true}``.
    OpenAPI 3.0.3 lets ``nullable`` act only beside a ``type``, so a validator that reads
    it strictly refuses the ``null`` the document means; spelled as "the reference or
    null" here, which is what the document says."""
    if isinstance(node, list):
        return [_nullable_refs(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _nullable_refs(value) for key, value in node.items()}
    if node.get("nullable") is True and "allOf" in node and "type" not in node:
        rest = {key: value for key, value in node.items() if key not in ("allOf", "nullable")}
        return {**rest, "anyOf": [{"allOf": node["allOf"]}, {"enum": [None]}]}
    return node


@cache
def _registry() -> Registry:
    resource = Resource.from_contents(_document(), default_specification=DRAFT4)
    return Registry().with_resource(_DOCUMENT_URI, resource)


def is_documented_elsewhere(path: str) -> bool:
    return path in UNDOCUMENTED_PATHS or path.startswith(UNDOCUMENTED_PREFIXES)


def check(exchange: Exchange) -> None:
    """ContractViolation unless the document allows this response."""
    where = f"{exchange.method} {exchange.path} -> {exchange.status}"
    if exchange.foreign and exchange.status == 403:
        _check_body(where, exchange, _error_schema())
        return
    operation = _document()["paths"].get(exchange.path, {}).get(exchange.method.lower())
    if operation is None:
        if is_documented_elsewhere(exchange.path):
            return
        # The document cannot list what does not exist: an unknown path answers 404,
        # another method on a known path 405 (or the 401 or 403 that come first), all in
        # the error shape; anything else is undocumented.
        known = exchange.path in _document()["paths"]
        if exchange.status in (_UNKNOWN_METHOD_STATUSES if known else _UNKNOWN_PATH_STATUSES):
            _check_body(where, exchange, _error_schema())
            return
        missing = "method" if known else "path"
        raise ContractViolation(f"{where}: the {missing} is not in {DOCUMENT.name}")
    responses = operation["responses"]
    response = responses.get(str(exchange.status), responses.get("default"))
    if response is None:
        raise ContractViolation(
            f"{where}: status {exchange.status} is not documented "
            f"(documented: {', '.join(sorted(responses))})"
        )
    media = response.get("content", {})
    if not media:
        return
    media_type = exchange.content_type.split(";")[0].strip()
    if media_type not in media:
        raise ContractViolation(
            f"{where}: content type {media_type!r} is not documented "
            f"(documented: {', '.join(sorted(media))})"
        )
    _check_body(where, exchange, media[media_type].get("schema", {}))


def _error_schema() -> dict[str, Any]:
    return {"$ref": "#/components/schemas/ErrorResponseSchema"}


def _check_body(where: str, exchange: Exchange, schema: dict[str, Any]) -> None:
    try:
        body = json.loads(exchange.body)
    except ValueError as error:
        raise ContractViolation(f"{where}: the body is not JSON ({error})") from None
    # The operation's schema sits inside the document, so its $refs resolve there.
    rooted = {"$ref": _DOCUMENT_URI + _pointer(schema)} if "$ref" in schema else schema
    validator = OAS30Validator(rooted, registry=_registry())
    problems = sorted(validator.iter_errors(body), key=lambda error: list(error.absolute_path))
    if problems:
        lines = [
            f"  at {'/'.join(map(str, problem.absolute_path)) or '(body)'}: {problem.message}"
            for problem in problems[:5]
        ]
        raise ContractViolation(
            f"{where}: the body does not match {DOCUMENT.name}:\n" + "\n".join(lines)
        )


def _pointer(schema: dict[str, Any]) -> str:
    ref = schema["$ref"]
    if not ref.startswith("#"):
        raise ValueError(f"only local references are expected, not {ref!r}")
    return ref


def _exchange(request: dict[str, Any], response: Any) -> Exchange | None:
    if getattr(response, "streaming", False):
        return None
    from django.conf import settings

    from server import origin_policy

    refused = origin_policy.refusal(
        request.get("HTTP_HOST"), request.get("HTTP_ORIGIN"), settings.POWERCONTEXT_ALLOWED_HOSTS
    )
    return Exchange(
        method=request.get("REQUEST_METHOD", "GET"),
        path=request.get("PATH_INFO", "/"),
        status=response.status_code,
        content_type=response.get("Content-Type", ""),
        body=response.content,
        foreign=refused is not None,
    )


_original_request = django_client.Client.request
_enabled = True


def _checked_request(self: django_client.Client, **request: Any) -> Any:
    response = _original_request(self, **request)
    if _enabled:
        exchange = _exchange(request, response)
        if exchange is not None:
            check(exchange)
    return response


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{EXEMPT_MARKER}(reason): the test's responses are not checked against the "
        "OpenAPI document (say why)",
    )
    django_client.Client.request = _checked_request  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    django_client.Client.request = _original_request  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _openapi_contract(request: pytest.FixtureRequest):
    """Turns the check off for a test marked ``openapi_unchecked``."""
    global _enabled
    _enabled = request.node.get_closest_marker(EXEMPT_MARKER) is None
    yield
    _enabled = True
