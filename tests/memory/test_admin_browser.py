"""The Memory browser in the admin: entries by scope with their state now, kind and
version; each entry's history with the reasons; revisions with their changes."""

import re

import pytest
from django.contrib.admin.utils import quote

pytestmark = pytest.mark.django_db

ENTRIES = "/admin/memory/memoryentryversion/"


@pytest.fixture
def browsing(admin_client, api, remember):
    kept = remember("Use the staging database for load tests.", kind="decision")
    revised = remember("Deploys happen on Tuesdays.")
    retired = remember("The importer runs at 02:00.")
    other = remember("Another scope's note.", scope_id="scope-b")
    revised_now = api.ok(
        "/v1/memory/entries/revise",
        {
            "scope_id": "scope-a",
            "citation": revised["entry"]["citation"],
            "kind": "note",
            "text": "Deploys happen on Wednesdays.",
            "reason": "The release day moved.",
        },
    )
    api.ok(
        "/v1/memory/entries/retire",
        {
            "scope_id": "scope-a",
            "citation": retired["entry"]["citation"],
            "reason": "The importer was replaced by a stream.",
        },
    )
    return {
        "client": admin_client,
        "kept": kept,
        "revised": revised,
        "revised_now": revised_now,
        "retired": retired,
        "other": other,
    }


def _row(page: str, text: str) -> str:
    """The changelist row that shows ``text``."""
    for row in re.findall(r"<tr[^>]*>.*?</tr>", page, re.S):
        if text in row:
            return row
    raise AssertionError(f"no row shows {text!r}")


def test_entries_show_their_state_kind_and_version(browsing):
    page = browsing["client"].get(ENTRIES).content.decode()
    assert "pc-state-retired" in _row(page, "The importer runs at 02:00.")
    assert ">retired<" in _row(page, "The importer runs at 02:00.")
    assert ">active<" in _row(page, "Deploys happen on Wednesdays.")
    assert ">2<" in _row(page, "Deploys happen on Wednesdays.")
    assert ">decision<" in _row(page, "Use the staging database")
    # The replaced version is history, not a second live entry.
    assert "Deploys happen on Tuesdays." not in page


def test_entries_filter_by_state_scope_and_kind(browsing):
    client = browsing["client"]
    retired = client.get(ENTRIES + "?state=retired").content.decode()
    assert "The importer runs at 02:00." in retired
    assert "Use the staging database" not in retired
    superseded = client.get(ENTRIES + "?state=superseded").content.decode()
    assert "Deploys happen on Tuesdays." in superseded
    assert "Wednesdays" not in superseded
    scoped = client.get(ENTRIES + "?scope=scope-b").content.decode()
    assert "Another scope's note." in scoped.replace("&#x27;", "'")
    assert "Use the staging database" not in scoped
    decisions = client.get(ENTRIES + "?kind=decision").content.decode()
    assert "Use the staging database" in decisions
    assert "The importer runs" not in decisions


def test_entry_page_shows_its_history_with_reasons(browsing):
    version_id = browsing["revised_now"]["entry"]["citation"]["entry_version_id"]
    page = browsing["client"].get(f"{ENTRIES}{quote(version_id)}/change/").content.decode()
    history = page[page.index('id="entry-history"') :]
    assert history.index(">add<") < history.index(">revise<")
    assert "The release day moved." in history
    assert "Deploys happen on Wednesdays." in page
    retired_id = browsing["retired"]["entry"]["citation"]["entry_version_id"]
    retired = browsing["client"].get(f"{ENTRIES}{quote(retired_id)}/change/").content.decode()
    assert "The importer was replaced by a stream." in retired
    assert ">retired<" in retired
    assert ">deactivate<" in retired  # the op by its public name, as /v1/memory/changes


def test_revisions_list_their_changes_with_reasons(browsing):
    page = browsing["client"].get("/admin/powercontext/artifactrevision/").content.decode()
    assert "The release day moved." in page
    assert "The importer was replaced by a stream." in page
    assert not re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", page)


def test_record_pages_show_no_raw_datetimes(browsing, api):
    from powercontext.models import ArtifactRevision, SourceRecord

    api.ok(
        "/v1/sources/content",
        {"scope_id": "scope-a", "source_id": "prompt-1", "content": "A prompt."},
        status=202,
    )
    client = browsing["client"]
    raw = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
    pages = [ENTRIES, "/admin/memory/memorymanifestrow/", "/admin/powercontext/sourcerecord/"]
    pages += [
        f"/admin/powercontext/artifactrevision/{row.pk}/change/"
        for row in ArtifactRevision.objects.all()
    ]
    pages += [
        f"/admin/powercontext/sourcerecord/{quote(row.pk)}/change/"
        for row in SourceRecord.objects.all()
    ]
    version_id = browsing["kept"]["entry"]["citation"]["entry_version_id"]
    pages.append(f"{ENTRIES}{quote(version_id)}/change/")
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert not raw.search(response.content.decode()), url
