"""The members of every existing operation's responses are a contract (RFC 0028 and the
operations before it): clients generated from it refuse a member they do not know. So the
committed document may not add one. ``response_members.json`` lists, per operation and
status, every member the contract gives (dotted, ``[]`` for an array's items); the
document may drop none it requires, and add none. A new operation is listed there when
it is added; what a response carries beyond its body (what a write redacted, say) goes
in a header."""

import json
from pathlib import Path

import yaml

from tests.openapi_contract import DOCUMENT

BASELINE = Path(__file__).with_name("response_members.json")


def members(document: dict) -> dict[str, list[str]]:
    """Per ``METHOD path status``, the dotted members of its JSON body's schema."""
    schemas = document["components"]["schemas"]

    def walk(schema: dict, prefix: str, found: set[str], seen: frozenset) -> None:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            if (name, prefix) not in seen:
                walk(schemas[name], prefix, found, seen | {(name, prefix)})
            return
        for key in ("allOf", "anyOf", "oneOf"):
            for part in schema.get(key, []):
                walk(part, prefix, found, seen)
        if "items" in schema:
            walk(schema["items"], prefix + "[]", found, seen)
        for name, part in schema.get("properties", {}).items():
            path = f"{prefix}.{name}" if prefix else name
            found.add(path)
            walk(part, path, found, seen)

    listed = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation.get("responses", {}).items():
                for media in response.get("content", {}).values():
                    found: set[str] = set()
                    walk(media.get("schema", {}), "", found, frozenset())
                    listed[f"{method.upper()} {path} {status}"] = sorted(found)
    return listed


def test_no_response_gains_a_member_the_contract_does_not_give():
    contract = json.loads(BASELINE.read_text(encoding="utf-8"))
    documented = members(yaml.safe_load(DOCUMENT.read_text(encoding="utf-8")))
    added = {
        key: sorted(set(found) - set(contract[key]))
        for key, found in documented.items()
        if key in contract and set(found) - set(contract[key])
    }
    assert not added, f"members the contract does not give: {added}"
    unlisted = sorted(set(documented) - set(contract))
    assert not unlisted, f"new responses, not in {BASELINE.name}: {unlisted}"


def test_the_walk_sees_a_nested_member():
    document = {
        "components": {"schemas": {"Hit": {"properties": {"text": {"type": "string"}}}}},
        "paths": {
            "/v1/x": {
                "post": {
                    "responses": {
                        "200": {
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "properties": {
                                            "hits": {
                                                "type": "array",
                                                "items": {"$ref": "#/components/schemas/Hit"},
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    }
    assert members(document) == {"POST /v1/x 200": ["hits", "hits[].text"]}
