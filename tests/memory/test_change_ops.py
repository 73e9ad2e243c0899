"""The change ops on the wire are the public ChangeOp enum; what is stored stays as
written, so a database written before the rename still reads and checks clean."""

import json
from pathlib import Path

import pytest
import yaml

from powercontext.maintenance import check
from powercontext.models import ArtifactRevision

pytestmark = pytest.mark.django_db
SCOPE = "scope-a"
OPENAPI = Path(__file__).resolve().parents[2] / "openapi" / "powercontext.yaml"
CHANGE_OPS = ["add", "revise", "deactivate", "reactivate"]  # the public contract


def _write_every_op(api, remember):
    entry = remember("Deploys go through the staging pipeline.", scope_id=SCOPE)["entry"]
    revised = api.ok(
        "/v1/memory/entries/revise",
        {"scope_id": SCOPE, "citation": entry["citation"], "kind": "note", "text": "v2"},
    )["entry"]
    body = {"scope_id": SCOPE, "citation": revised["citation"]}
    retired = api.ok("/v1/memory/entries/retire", body)["entry"]
    api.ok("/v1/memory/entries/reactivate", {"scope_id": SCOPE, "citation": retired["citation"]})


def test_a_retire_is_reported_as_deactivate(api, remember):
    _write_every_op(api, remember)
    changes = api.ok("/v1/memory/changes", {"scope_id": SCOPE, "since_revision": 0})
    ops = [change["op"] for rev in changes["revisions"] for change in rev["changes"]]
    assert ops == CHANGE_OPS


def test_the_openapi_enum_is_the_public_one():
    document = yaml.safe_load(OPENAPI.read_text())
    change = document["components"]["schemas"]["MemoryChangeSchema"]["properties"]["op"]
    enum = document["components"]["schemas"][change["$ref"].rsplit("/", 1)[1]]["enum"]
    assert enum == CHANGE_OPS


def test_stored_changes_keep_their_name_and_still_check_clean(api, remember):
    # The revision content is hash-chained evidence: it keeps the name it was written
    # with ("retire"), as in every existing database, and check_integrity accepts it.
    _write_every_op(api, remember)
    stored = [
        change["op"]
        for content in ArtifactRevision.objects.filter(scope_id=SCOPE, family="memory")
        .order_by("revision")
        .values_list("content", flat=True)
        for change in json.loads(content)["changes"]
    ]
    assert stored == ["add", "revise", "retire", "reactivate"]
    assert [str(f) for result in check(scope_id=SCOPE) for f in result.findings] == []
