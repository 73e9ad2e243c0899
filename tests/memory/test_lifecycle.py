"""The remember decision table, revise / retire / reactivate, exact get, listing and
changes, through the HTTP API."""

import unicodedata

import pytest

from tests.conftest import error_code

pytestmark = pytest.mark.django_db

SCOPE = "scope-a"


def head(api, scope=SCOPE):
    listed = api.ok("/v1/memory/entries/list", {"scope_id": scope, "include_inactive": True})
    return listed["memory"]["revision"] if listed["memory"] else 0


def get(api, citation, scope=SCOPE):
    return api.post("/v1/memory/entries/get", {"scope_id": scope, "citation": citation})


def write(api, op, citation, scope=SCOPE, **extra):
    return api.post(f"/v1/memory/entries/{op}", {"scope_id": scope, "citation": citation, **extra})


class TestRememberDecisionTable:
    def test_same_kind_and_text_as_active_entry_is_a_noop(self, api, remember):
        first = remember("Deploys go through the staging pipeline.")
        again = remember("Deploys go through the staging pipeline.")
        assert again == {"memory": first["memory"], "entry": None}
        assert head(api) == 1

    def test_nfc_equivalent_text_is_the_same_entry(self, api, remember):
        remember(unicodedata.normalize("NFC", "café au lait"))
        again = remember(unicodedata.normalize("NFD", "café au lait"))
        assert again["entry"] is None

    def test_same_text_with_other_kind_is_a_new_entry(self, api, remember):
        remember("Use uv for installs.", kind="convention")
        other = remember("Use uv for installs.", kind="decision")
        assert other["entry"] is not None
        assert other["memory"]["revision"] == 2

    def test_same_text_as_retired_entry_is_a_new_entry(self, api, remember):
        entry = remember("Old fact.")["entry"]
        assert write(api, "retire", entry["citation"]).status_code == 200
        renewed = remember("Old fact.")["entry"]
        assert renewed is not None
        assert renewed["citation"]["entry_id"] != entry["citation"]["entry_id"]

    def test_stale_expected_revision_is_a_conflict_checked_first(self, api, remember):
        remember("One.")
        remember("Two.")
        # Would be a no-op, but the pinned revision is stale: the conflict wins.
        response = api.post(
            "/v1/memory/remember",
            {"scope_id": SCOPE, "kind": "note", "text": "One.", "expected_revision": 1},
        )
        assert response.status_code == 409
        assert error_code(response) == "revision_conflict"
        assert head(api) == 2

    def test_matching_expected_revision_writes(self, api, remember):
        remember("One.")
        result = remember("Two.", expected_revision=1)
        assert result["memory"]["revision"] == 2
        assert remember("Three.", expected_revision=0 + 2)["memory"]["revision"] == 3

    def test_expected_revision_zero_on_new_scope(self, api, remember):
        assert remember("First.", expected_revision=0)["memory"]["revision"] == 1


class TestReviseRetireReactivate:
    def test_revise_creates_next_version_and_old_citation_still_resolves(self, api, remember):
        v1 = remember("Tests run with pytest.")["entry"]
        result = write(api, "revise", v1["citation"], kind="note", text="Tests run with pytest -q.")
        assert result.status_code == 200
        v2 = result.json()["entry"]
        assert v2["version"] == 2
        assert v2["citation"]["entry_id"] == v1["citation"]["entry_id"]
        assert v2["citation"]["entry_version_id"] != v1["citation"]["entry_version_id"]
        assert get(api, v1["citation"]).json() == v1
        assert get(api, v2["citation"]).json() == v2

    def test_revising_a_superseded_version_is_a_conflict(self, api, remember):
        v1 = remember("A")["entry"]
        write(api, "revise", v1["citation"], kind="note", text="B")
        response = write(api, "revise", v1["citation"], kind="note", text="C")
        assert response.status_code == 409
        assert error_code(response) == "revision_conflict"
        response = write(api, "retire", v1["citation"])
        assert error_code(response) == "revision_conflict"

    def test_citation_with_older_revision_but_latest_version_is_current(self, api, remember):
        entry = remember("Keep me current.")["entry"]
        remember("Unrelated write moves the head.")
        response = write(api, "revise", entry["citation"], kind="note", text="Kept current.")
        assert response.status_code == 200

    def test_identical_revision_is_a_noop(self, api, remember):
        entry = remember("Same.")["entry"]
        result = write(api, "revise", entry["citation"], kind="note", text="  Same. ").json()
        assert result["entry"] is None
        assert head(api) == 1

    def test_retire_and_reactivate(self, api, remember):
        entry = remember("Feature flags live in flags.yaml.")["entry"]
        retired = write(api, "retire", entry["citation"], reason="moved").json()["entry"]
        assert retired["state"] == "inactive"
        assert retired["citation"]["entry_version_id"] == entry["citation"]["entry_version_id"]
        search = api.ok("/v1/memory/search", {"scope_id": SCOPE, "query": "flags"})
        assert search["hits"] == []
        # The citation held from before still fetches the version, active in its revision.
        assert get(api, entry["citation"]).json()["state"] == "active"
        assert get(api, retired["citation"]).json()["state"] == "inactive"

        for op, extra in (("retire", {}), ("revise", {"kind": "note", "text": "x"})):
            response = write(api, op, retired["citation"], **extra)
            assert response.status_code == 409
            assert error_code(response) == "memory_entry_inactive"

        reactivated = write(api, "reactivate", retired["citation"]).json()["entry"]
        assert reactivated["state"] == "active"
        hits = api.ok("/v1/memory/search", {"scope_id": SCOPE, "query": "flags"})["hits"]
        assert [hit["citation"] for hit in hits] == [reactivated["citation"]]
        assert write(api, "reactivate", reactivated["citation"]).json()["entry"] is None

    def test_changes_record_every_operation(self, api, remember):
        entry = remember("X")["entry"]
        revised = write(api, "revise", entry["citation"], kind="note", text="Y", reason="fix")
        revised = revised.json()["entry"]
        write(api, "retire", revised["citation"])
        write(api, "reactivate", revised["citation"])
        changes = api.ok("/v1/memory/changes", {"scope_id": SCOPE, "since_revision": 0})
        ops = [
            (
                rev["memory_ref"]["revision"],
                change["op"],
                change["from_entry_version_id"],
                change["to_entry_version_id"],
                change["reason"],
            )
            for rev in changes["revisions"]
            for change in rev["changes"]
        ]
        v1 = entry["citation"]["entry_version_id"]
        v2 = revised["citation"]["entry_version_id"]
        assert ops == [
            (1, "add", None, v1, None),
            (2, "revise", v1, v2, "fix"),
            (3, "deactivate", v2, None, None),
            (4, "reactivate", None, v2, None),
        ]
        assert changes["memory"]["revision"] == 4
        assert changes["next_since"] is None

    def test_changes_page_with_next_since(self, api, remember):
        for index in range(5):
            remember(f"fact {index}")
        page = api.ok("/v1/memory/changes", {"scope_id": SCOPE, "since_revision": 1, "limit": 2})
        assert [rev["memory_ref"]["revision"] for rev in page["revisions"]] == [2, 3]
        assert page["next_since"] == 3
        rest = api.ok("/v1/memory/changes", {"scope_id": SCOPE, "since_revision": 3, "limit": 2})
        assert [rev["memory_ref"]["revision"] for rev in rest["revisions"]] == [4, 5]
        assert rest["next_since"] is None


class TestExactGet:
    def test_unknown_revision_or_artifact_is_artifact_not_found(self, api, remember):
        citation = remember("x")["entry"]["citation"]
        for ref_patch in ({"revision": 2}, {"family": "experience"}, {"artifact_id": "other"}):
            bad = {**citation, "memory_ref": {**citation["memory_ref"], **ref_patch}}
            response = get(api, bad)
            assert response.status_code == 404
            assert error_code(response) == "artifact_not_found"
        assert error_code(get(api, citation, scope="other-scope")) == "artifact_not_found"

    def test_version_not_in_cited_revision_is_memory_not_found(self, api, remember):
        remember("first")
        later = remember("second")["entry"]["citation"]
        early = {**later, "memory_ref": {**later["memory_ref"], "revision": 1}}
        response = get(api, early)
        assert response.status_code == 404
        assert error_code(response) == "memory_not_found"
        unknown = {**later, "entry_version_id": "mem_ver_" + "0" * 32}
        assert error_code(get(api, unknown)) == "memory_not_found"

    def test_get_after_revise_and_retire_returns_exact_historical_version(self, api, remember):
        original = remember("  The API listens on port 8000.  ")["entry"]
        v2 = write(api, "revise", original["citation"], kind="note", text="Port 9000.").json()
        write(api, "retire", v2["entry"]["citation"])
        fetched = get(api, original["citation"]).json()
        assert fetched == original
        assert fetched["text"] == "The API listens on port 8000."


class TestListing:
    def test_list_pages_with_cursor_over_one_revision(self, api, remember):
        for index in range(5):
            remember(f"entry {index}")
        first = api.ok("/v1/memory/entries/list", {"scope_id": SCOPE, "limit": 2})
        remember("written between pages")
        seen = [entry["citation"]["entry_id"] for entry in first["entries"]]
        cursor = first["next_cursor"]
        while cursor:
            page = api.ok(
                "/v1/memory/entries/list", {"scope_id": SCOPE, "limit": 2, "cursor": cursor}
            )
            assert page["memory"] == first["memory"]
            seen += [entry["citation"]["entry_id"] for entry in page["entries"]]
            cursor = page["next_cursor"]
        assert len(seen) == len(set(seen)) == 5
        assert seen == sorted(seen)

    def test_include_inactive_and_cursor_bound_to_filters(self, api, remember):
        entries = [remember(f"e{index}")["entry"] for index in range(3)]
        write(api, "retire", entries[0]["citation"])
        active = api.ok("/v1/memory/entries/list", {"scope_id": SCOPE})["entries"]
        everything = api.ok(
            "/v1/memory/entries/list", {"scope_id": SCOPE, "include_inactive": True}
        )
        assert len(active) == 2
        assert sorted(entry["state"] for entry in everything["entries"]) == [
            "active",
            "active",
            "inactive",
        ]
        page = api.ok("/v1/memory/entries/list", {"scope_id": SCOPE, "limit": 1})
        response = api.post(
            "/v1/memory/entries/list",
            {
                "scope_id": SCOPE,
                "limit": 1,
                "include_inactive": True,
                "cursor": page["next_cursor"],
            },
        )
        assert response.status_code == 422

    def test_empty_scope(self, api):
        assert api.ok("/v1/memory/entries/list", {"scope_id": "nothing"}) == {
            "memory": None,
            "entries": [],
            "next_cursor": None,
        }
        assert api.ok("/v1/memory/search", {"scope_id": "nothing", "query": "x"}) == {
            "memory": None,
            "mode": None,
            "hits": [],
        }


class TestScopes:
    def test_scopes_are_isolated_and_case_sensitive(self, api, remember):
        remember("kubernetes manifests live in deploy/", scope_id="Repo")
        remember("kubernetes is not used here", scope_id="repo")
        upper = api.ok("/v1/memory/search", {"scope_id": "Repo", "query": "kubernetes"})["hits"]
        lower = api.ok("/v1/memory/search", {"scope_id": "repo", "query": "kubernetes"})["hits"]
        assert [hit["text"] for hit in upper] == ["kubernetes manifests live in deploy/"]
        assert [hit["text"] for hit in lower] == ["kubernetes is not used here"]

    @pytest.mark.parametrize("other", ["repo ", " repo", "repo\t", "repó"])
    def test_scopes_differing_only_in_spaces_or_accents_are_distinct(self, api, remember, other):
        remember("only in the plain scope", scope_id="repo")
        assert api.ok("/v1/memory/search", {"scope_id": other, "query": "plain scope"}) == {
            "memory": None,
            "mode": None,
            "hits": [],
        }
        remember("only in the other scope", scope_id=other)
        listed = api.ok("/v1/memory/entries/list", {"scope_id": "repo"})["entries"]
        assert [entry["text"] for entry in listed] == ["only in the plain scope"]

    def test_citation_from_another_scope_does_not_resolve(self, api, remember):
        citation = remember("secret of a", scope_id="a")["entry"]["citation"]
        remember("b has memory", scope_id="b")
        assert error_code(get(api, citation, scope="b")) == "memory_not_found"


class TestSearchOrdering:
    def test_scores_are_normalised_and_ties_break_by_entry_id(self, api, remember):
        for index in range(4):
            remember(f"migration note {index}")
        for mode in ("fts", "auto"):
            hits = api.ok(
                "/v1/memory/search", {"scope_id": SCOPE, "query": "migration", "mode": mode}
            )["hits"]
            assert hits[0]["score"] == 1.0
            assert all(0 <= hit["score"] <= 1 for hit in hits)
        hits = api.ok(
            "/v1/memory/search", {"scope_id": SCOPE, "query": "migration", "mode": "fts"}
        )["hits"]
        ids = [hit["citation"]["entry_id"] for hit in hits]
        assert ids == sorted(ids)  # equal bm25 scores (the vectors of "note 0..3" differ)

    def test_better_match_ranks_first(self, api, remember):
        remember("the redis cache")
        remember("redis redis cache eviction for redis")
        hits = api.ok("/v1/memory/search", {"scope_id": SCOPE, "query": "redis eviction"})["hits"]
        assert hits[0]["text"] == "redis redis cache eviction for redis"
        assert hits[1]["score"] < 1.0

    def test_limit(self, api, remember):
        for index in range(12):
            remember(f"flaky test {index}")
        hits = api.ok("/v1/memory/search", {"scope_id": SCOPE, "query": "flaky", "limit": 3})[
            "hits"
        ]
        assert len(hits) == 3
