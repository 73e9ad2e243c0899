"""The audit trail in the admin is browse-only: even a superuser cannot edit or delete a
Memory version, manifest row, artifact revision or captured source through it."""

import pytest
from django.contrib.admin.utils import quote

from memory.models import MemoryEntryVersion, MemoryManifestRow
from powercontext.models import ArtifactRevision, SourceRecord
from powercontext.sources import source_capture

pytestmark = pytest.mark.django_db


def test_no_admin_edit_or_delete_of_the_audit_trail(admin_client, remember):
    remember("A memory nobody may edit by hand.")
    source_capture(scope_id="scope-a", source_id="prompt:1", content="A captured prompt.")
    rows = [
        ("memory/memoryentryversion", MemoryEntryVersion),
        ("memory/memorymanifestrow", MemoryManifestRow),
        ("powercontext/artifactrevision", ArtifactRevision),
        ("powercontext/sourcerecord", SourceRecord),
    ]
    for path, model in rows:
        row = model.objects.get()
        before = {field.attname: getattr(row, field.attname) for field in model._meta.fields}
        base = f"/admin/{path}/{quote(row.pk)}/"
        assert admin_client.get(base + "change/").status_code == 200, path  # viewable
        assert admin_client.post(base + "change/", {}).status_code == 403, path
        assert admin_client.get(base + "delete/").status_code == 403, path
        assert admin_client.post(base + "delete/", {"post": "yes"}).status_code == 403, path
        bulk = {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"}
        admin_client.post(f"/admin/{path}/", bulk)
        row.refresh_from_db()
        after = {field.attname: getattr(row, field.attname) for field in model._meta.fields}
        assert after == before, path
