"""The desk's pack preview (``contextpack.preview``): the exact pack prepare returns, why it
holds what it holds, and nothing written, counted or logged."""

import html
import json
import logging
import re
from dataclasses import replace

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from contextpack import application, builder
from experience import services as experience_services
from experience.values import Proposal
from memory import selectors
from memory import services as memory_services
from memory.search_index import MEMORY_INDEX
from powercontext import metrics
from powercontext.models import SourceRecord
from powercontext.search import database_engine, policy
from tests.api_calls import capture_prompt
from tests.experience.conftest import SOURCE, capture_source, proposal

pytestmark = pytest.mark.django_db

PREVIEW = "/admin/contextpack/preview/"
SCOPE = "git:example.com/team/preview-repo"
PASSWORD = "pw-for-tests"
DUPLICATING = "tests.contextpack.test_preview.DuplicatingEngine"


class DuplicatingEngine:
    """The database's own search engine, but every Memory hit comes back twice (as a
    faulty index could answer): the builder's duplicate rule is what keeps the pack clean."""

    def __init__(self):
        self.real = database_engine()

    def __getattr__(self, name):
        return getattr(self.real, name)

    def match(self, index, **kwargs):
        hits = self.real.match(index, **kwargs)
        if index != MEMORY_INDEX:
            return hits
        return [copy for hit in hits for copy in (hit, hit)]


@pytest.fixture
def desk(reviewer):
    """A reviewer (the ``Experience reviewers`` group) who may log in to the admin."""
    reviewer.is_staff = True
    reviewer.set_password(PASSWORD)
    reviewer.save()
    client = Client()
    client.force_login(reviewer)
    return client


def prepared_content(api, query, max_bytes=8000, scope=SCOPE):
    response = api.post(
        "/v1/context/prepare", {"scope_id": scope, "query": query, "max_bytes": max_bytes}
    )
    assert response.status_code == 200, response.content
    return json.loads(response.content)["content"]


def preview(desk, query, max_bytes=8000, scope=SCOPE):
    response = desk.post(PREVIEW, {"scope_id": scope, "query": query, "max_bytes": max_bytes})
    assert response.status_code == 200, response.content
    return response


def page_pack(response):
    """The pack as the page shows it, unescaped: None when the page shows no pack."""
    found = re.search(r'<pre id="pack">(.*?)</pre>', response.content.decode(), re.DOTALL)
    return None if found is None else html.unescape(found.group(1))


def left_out(response):
    return {(row.hit.family, row.hit.rank): row for row in response.context["left_out"]}


def included(response):
    return {(row.hit.family, row.hit.rank): row for row in response.context["included"]}


def remember_many(remember, count, text="Importer note {n}: retry with backoff."):
    return [remember(text.format(n=n), scope_id=SCOPE) for n in range(count)]


# What twenty Importer notes are about: each note says its own thing (a pack gives two
# notes that say the same thing one slot, docs/relevance.md, "Near-duplicates").
IMPORTER_STEPS = (
    "the CSV parser",
    "the S3 download",
    "the invoice sync",
    "the customer upload",
    "the nightly export",
    "the webhook relay",
    "the currency rates fetch",
    "the tax table refresh",
    "the product catalogue",
    "the shipping labels",
    "the stock levels",
    "the payroll batch",
    "the address checker",
    "the email bounce feed",
    "the search reindex",
    "the image thumbnails",
    "the audit log copy",
    "the ledger close",
    "the partner API",
    "the fraud scores",
)


def remember_distinct(remember, count):
    return [
        remember(f"Importer note {n}: {step} step retries with backoff.", scope_id=SCOPE)
        for n, step in enumerate(IMPORTER_STEPS[:count])
    ]


# -- the pack is prepare's, byte for byte ---------------------------------------------


@pytest.mark.parametrize(
    ("query", "max_bytes"),
    [
        ("How do we retry the importer?", 8000),
        ("importer backoff, and the huge payroll export", 8000),  # cut at the item cap
        ("importer backoff, and the huge payroll export", 900),  # cut to fit, over budget
        ("Line one about the importer.\nLine two: “quotes” <b>&amp;</b> 漢字 \u2028 end", 8000),
        ("nothing matches zebra", 8000),  # empty
    ],
)
def test_the_preview_shows_exactly_what_prepare_returns(
    api, desk, remember, query, max_bytes, settings
):
    remember_many(remember, 12)
    remember("The payroll export is huge: " + "payroll rows " * 300, scope_id=SCOPE)
    remember('Escapes: <b>&amp;</b> "quoted" \u2028 漢字 importer', scope_id=SCOPE)
    for backend in (None, DUPLICATING):
        settings.POWERCONTEXT_SEARCH_ENGINE = backend
        expected = prepared_content(api, query, max_bytes)
        response = preview(desk, query, max_bytes)
        shown = response.context["prepared"].content
        assert shown == expected
        if expected is None:
            assert page_pack(response) is None
            assert "Empty: the hook injects nothing." in response.content.decode()
        else:
            assert page_pack(response).encode("utf-8") == expected.encode("utf-8")


def test_a_textarea_prompt_is_previewed_as_the_agent_sends_it(api, desk, remember):
    # Five captured prompts make "deploy" recurring; the sixth is this very prompt, which
    # prepare leaves out of the history only if the preview sends its LF line breaks.
    remember("Deploy the importer with the staging flag.", scope_id=SCOPE)
    prompt = "deploy the importer\ndeploy it now"
    for turn in range(4):
        capture_prompt(api, SCOPE, f"deploy step {turn}", turn=str(turn))
    capture_prompt(api, SCOPE, prompt, turn="same")
    response = desk.post(
        PREVIEW,
        {"scope_id": SCOPE, "query": prompt.replace("\n", "\r\n"), "max_bytes": 8000},
    )
    assert response.context["prepared"].content == prepared_content(api, prompt)
    assert response.context["explanation"].recent_prompts == 4


# -- why: each hit's channel, rank and fate ---------------------------------------------


def test_items_show_channel_and_rank_and_the_reasons_for_what_was_left_out(
    api,
    desk,
    remember,
    propose,
    approve,
):
    remember_distinct(remember, 20)
    approve(propose("Importer: retry with backoff.", scope_id=SCOPE), scope_id=SCOPE)
    # Its lesson speaks to the prompt's backoff too: an Experience on the importer alone
    # would leave the pack for its focus (relevance.off_focus).
    other = proposal(
        "Importer: alert when the backoff gives up after three failures.",
        situation="The importer failed silently for a week.",
        action="We added an alert on repeated importer failures.",
        outcome="The next outage was noticed within the hour.",
    )
    approve(propose(scope_id=SCOPE, proposal=other), scope_id=SCOPE)
    response = preview(desk, "importer backoff")
    # Hits past the windows were fetched for the explanation; the pack is still prepare's.
    assert response.context["prepared"].content == prepared_content(api, "importer backoff")
    page = response.content.decode()
    shown = included(response)
    # Interleaved M1 E1 M2 E2 M3 M4 M5 M6: the pack's eight items.
    assert sorted(shown) == [
        *(("experience", rank) for rank in (1, 2)),
        *(("memory", rank) for rank in range(1, 7)),
    ]
    assert [row.hit.decision.position for row in response.context["included"]] == list(range(1, 9))
    # Every item holds the prompt's words; most are near it in meaning too.
    assert {row.channels for row in shown.values()} <= {"fts", "fts + vector"}
    assert all(row.reason == "whole" for row in shown.values())
    rows = left_out(response)
    assert {rank: rows["memory", rank].hit.decision.outcome for rank in range(7, 21)} == {
        **dict.fromkeys((7, 8), builder.ITEM_LIMIT),
        **dict.fromkeys(range(9, 17), builder.FAMILY_LIMIT),
        **dict.fromkeys(range(17, 21), builder.OUTSIDE_WINDOW),
    }
    assert "the pack already held its 8 items" in page
    assert "over the Memory limit: the best 8 were already chosen" in page
    assert "outside the window: the pack considers the best 16 Memory hits" in page
    # The pack's items are the ones the page says, in its order.
    pack = response.context["prepared"].content
    rendered = json.loads(pack.split("V1\n", 1)[1].rsplit("\nEND", 1)[0])["items"]
    for row, item in zip(response.context["included"], rendered, strict=True):
        if row.hit.family == "memory":
            assert item["citation"]["entry_id"] == row.hit.citation["entry_id"]
        else:
            assert item["citation"] == row.hit.citation


# Committed writes: on OceanBase the vector table is created outside any transaction, so
# inside a test's transaction there would be no vectors to find. A flushed database has no
# reviewer group: a superuser looks at the desk and approves.
@pytest.mark.django_db(transaction=True)
def test_each_item_shows_the_channels_that_found_it_words_meaning_or_both():
    root = get_user_model().objects.create_superuser("root", password=None)
    desk = Client()
    desk.force_login(root)
    memory_services.memory_remember(
        scope_id=SCOPE, kind="note", text="The PostgreSQL pool runs out of connections under load."
    )
    memory_services.memory_remember(
        scope_id=SCOPE, kind="note", text="Invoices are emailed on the first day of the month."
    )
    capture_source(SCOPE)
    lesson = "Raise the PostgreSQL pool size before a load test."
    candidate = experience_services.experience_propose(
        scope_id=SCOPE,
        proposal=Proposal(lesson, lesson, lesson, lesson),
        source_refs=[SOURCE],
        artifact_refs=[],
    )
    experience_services.candidate_approve(
        scope_id=SCOPE,
        candidate_id=candidate.candidate_id,
        expected_version=candidate.version,
        reviewer=root,
    )

    # No word of the prompt is in either entry: only their meaning finds them.
    by_meaning = included(preview(desk, "postgres exhausted"))
    # "pool" is in the entry's words, and the prompt means what the entry says.
    both = preview(desk, "database pool exhausted")

    assert by_meaning["memory", 1].channels == "vector"
    assert by_meaning["experience", 1].channels == "vector"
    assert included(both)["memory", 1].channels == "fts + vector"
    assert "fts + vector" in both.content.decode()


def test_duplicates_name_the_hit_they_repeat(api, desk, remember, settings, monkeypatch):
    remember_many(remember, 3)
    settings.POWERCONTEXT_SEARCH_ENGINE = DUPLICATING
    # Lexical only: fusing two channels keeps one hit per entry, so a duplicating index
    # shows its duplicates to the builder only on the lexical path.
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    response = preview(desk, "importer")
    rows = left_out(response)
    assert {rank: rows["memory", rank].hit.decision.duplicate_of for rank in (2, 4, 6)} == {
        2: 1,
        4: 3,
        6: 5,
    }
    assert {row.hit.decision.outcome for row in rows.values()} == {builder.DUPLICATE}
    assert "duplicate of Memory #1" in response.content.decode()
    assert sorted(included(response)) == [("memory", 1), ("memory", 3), ("memory", 5)]


def test_truncation_at_the_cap_and_to_fit_and_over_budget(desk, remember, monkeypatch):
    # The lexical order, so the long entry ranks first (the test is about the cuts).
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    remember("Payroll export: " + "payroll rows " * 300, scope_id=SCOPE)
    remember("Payroll: the short rule, long enough to be cut " + "x" * 200, scope_id=SCOPE)
    whole = preview(desk, "payroll")
    cut = {row.hit.decision.cut for row in whole.context["included"]}
    assert cut == {builder.CUT_AT_CAP, None}
    assert "cut at the 2000-byte item cap" in whole.content.decode()

    tight = preview(desk, "payroll", max_bytes=900)
    [first] = tight.context["included"]
    assert first.hit.decision.cut == builder.CUT_TO_FIT
    assert "cut to fit the" in first.reason
    [(_, second)] = left_out(tight).items()
    assert second.hit.decision.outcome == builder.OVER_BUDGET
    assert second.reason.startswith("over budget: ")
    assert tight.context["prepared"].items_skipped_for_budget == 1


def test_query_terms_say_why_each_was_searched_or_left_out(api, desk, remember):
    # 60 documents: enough to call a term common; "importer" is in all of them.
    remember_many(remember, 50)
    # Digits: words the analyzer does not stem, so each stays a term of its own.
    rare = [f"rare{n:02d}" for n in range(policy.MAX_QUERY_TERMS)]
    for n, word in enumerate(rare):
        # Each rare word in n+1 documents, so the rarest are the first ones.
        for _ in range(1 if n < 20 else 2):
            remember(f"Importer {word} deploy {n}.", scope_id=SCOPE)
    remember("Importer rare99 is the least rare of the rare ones", scope_id=SCOPE)
    remember("Importer rare99 again", scope_id=SCOPE)
    remember("Importer rare99 thrice", scope_id=SCOPE)
    for turn in range(policy.MIN_PROMPTS_FOR_RECURRING):
        capture_prompt(api, SCOPE, f"please deploy step {turn}", turn=str(turn))
    query = "the importer deploy zebra " + " ".join(rare) + " rare99"
    response = preview(desk, query)
    rows = {row["term"]: row for row in response.context["terms"]["rows"]}
    assert "the" in response.context["terms"]["stop_words"]
    assert "the" not in rows
    assert rows["deploy"]["memory"].startswith("weighted down as a recurring instruction: in 5 of")
    assert rows["zebra"]["memory"] == "left out: in no document"
    assert rows["import"]["memory"].startswith("weighted down as common: in ")
    assert rows["rare99"]["memory"] == (
        f"left out: only the {policy.MAX_QUERY_TERMS} rarest terms are searched"
    )
    assert all(rows[word]["memory"].startswith("searched: in ") for word in rare)
    # Experience has no documents: its search knows none of the terms.
    assert rows["rare99"]["experience"] == "left out: in no document"
    assert "Function words, never searched:" in response.content.decode()


def test_an_index_that_disagrees_with_the_head_is_reported_not_a_server_error(
    api, desk, remember, monkeypatch
):
    remember("Mismatch target entry.", scope_id=SCOPE)
    real = selectors.memory_search_at

    def stale(**kwargs):
        return [replace(hit, revision=hit.revision + 1) for hit in real(**kwargs)]

    monkeypatch.setattr(application, "memory_search_at", stale)
    assert (
        api.post("/v1/context/prepare", {"scope_id": SCOPE, "query": "mismatch target"}).status_code
        == 500
    )
    response = preview(desk, "mismatch target")
    assert "prepared" not in response.context
    assert "Prepare would fail for this prompt" in response.content.decode()


# -- it writes, counts and logs nothing --------------------------------------------------


def _row_counts():
    return {model._meta.label: model._default_manager.count() for model in apps.get_models()}


def test_a_preview_writes_nothing_and_is_not_counted(api, desk, remember, settings):
    remember_many(remember, 3)
    capture_prompt(api, SCOPE, "an earlier prompt about the importer", turn="0")
    before = _row_counts()
    prepared_before = metrics.prepare_requests.labels(
        outcome="ready", search_mode="hybrid"
    )._value.get()
    for backend in (None, DUPLICATING):
        settings.POWERCONTEXT_SEARCH_ENGINE = backend
        preview(desk, "How do we retry the importer?")
        preview(desk, "no such thing at all")
    assert _row_counts() == before
    assert SourceRecord.objects.count() == before["powercontext.SourceRecord"] == 1
    assert (
        metrics.prepare_requests.labels(outcome="ready", search_mode="hybrid")._value.get()
        == prepared_before
    )


def test_logs_hold_no_prompt_scope_or_memory(desk, remember, caplog):
    scope = "git:secret.example.com/hidden/scope"
    remember("The zanzibar importer retries with backoff.", scope_id=scope)
    with caplog.at_level(logging.DEBUG):
        response = preview(desk, "how does zanzibar retry", scope=scope)
        desk.post(PREVIEW, {"scope_id": scope, "query": " ", "max_bytes": 8000})
    assert response.context["prepared"].status == "ready"
    logged = caplog.text
    assert "/admin/contextpack/preview/" in logged  # the route is logged, so caplog sees it
    for secret in ("zanzibar", scope, "hidden", "mem_ent_", "mem_ver_"):
        assert secret not in logged


# -- who may use it ----------------------------------------------------------------------


def test_anonymous_users_are_sent_to_the_login(client):
    for response in (
        client.get(PREVIEW),
        client.post(PREVIEW, {"scope_id": SCOPE, "query": "importer", "max_bytes": 8000}),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/?next=/admin/contextpack/preview/")


def test_non_staff_are_sent_to_the_login_and_staff_without_the_view_rights_refused(
    django_user_model,
):
    client = Client()
    user = django_user_model.objects.create_user("nobody")
    client.force_login(user)
    assert client.get(PREVIEW).status_code == 302
    user.is_staff = True
    user.save()
    assert client.get(PREVIEW).status_code == 403
    user.groups.add(Group.objects.get(name="Experience reviewers"))
    assert client.get(PREVIEW).status_code == 200


def test_the_form_is_csrf_protected(reviewer):
    reviewer.is_staff = True
    reviewer.save()
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    body = {"scope_id": SCOPE, "query": "importer", "max_bytes": 8000}
    assert client.post(PREVIEW, body).status_code == 403
    page = client.get(PREVIEW)
    assert 'method="post"' in page.content.decode()
    token = page.cookies["csrftoken"].value
    assert client.post(PREVIEW, {**body, "csrfmiddlewaretoken": token}).status_code == 200


def test_the_admin_index_links_to_the_preview_for_those_who_may_use_it(desk, django_user_model):
    assert f'href="{PREVIEW}"' in desk.get("/admin/").content.decode()
    client = Client()
    client.force_login(django_user_model.objects.create_user("staff-only", is_staff=True))
    page = client.get("/admin/")
    assert page.status_code == 200
    assert PREVIEW not in page.content.decode()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope_id": SCOPE, "query": "   ", "max_bytes": 8000}, "query"),
        ({"scope_id": "", "query": "importer", "max_bytes": 8000}, "scope_id"),
        ({"scope_id": SCOPE, "query": "x" * 8193, "max_bytes": 8000}, "query"),
        ({"scope_id": SCOPE, "query": "importer", "max_bytes": 100}, "max_bytes"),
        ({"scope_id": SCOPE, "query": "importer", "max_bytes": "lots"}, "max_bytes"),
    ],
)
def test_what_prepare_refuses_the_form_refuses(desk, body, field):
    response = desk.post(PREVIEW, body)
    assert response.status_code == 200
    assert field in response.context["form"].errors
    assert "prepared" not in response.context


@pytest.mark.django_db(transaction=True)
def test_the_preview_says_why_each_candidate_was_admitted_or_left_out(
    reviewer_group, api, desk, remember
):
    # The scope answers nothing about GraphQL: its nearest entries are candidates the
    # relevance decision leaves out, each with the semantic channel's rank and the reason.
    remember("Configure Celery's worker concurrency in settings/base.py.", scope_id=SCOPE)
    remember("The dev database is PostgreSQL 16, on port 5433.", scope_id=SCOPE)
    response = preview(desk, "How do I configure GraphQL schema stitching?")
    explanation = response.context["explanation"]
    assert response.context["prepared"].status == "empty"
    assert explanation.candidates
    assert not any(candidate.admitted for candidate in explanation.candidates)
    assert any(candidate.semantic_rank == 1 for candidate in explanation.candidates)
    page = response.content.decode()
    assert 'id="relevance"' in page
    assert "left out: " in page
    # A prompt the scope answers: its entry is admitted, and says why.
    response = preview(desk, "Which port does the dev database use?")
    admitted = [c for c in response.context["explanation"].candidates if c.admitted]
    assert admitted
    assert "admitted: " in response.content.decode()


def test_the_left_out_table_does_not_say_nothing_was_left_out_above_refused_candidates(
    reviewer_group, api, desk, remember
):
    remember("Configure Celery's worker concurrency in settings/base.py.", scope_id=SCOPE)
    remember("The dev database is PostgreSQL 16, on port 5433.", scope_id=SCOPE)
    response = preview(desk, "How do I configure GraphQL schema stitching?")
    refused = sum(not c.admitted for c in response.context["explanation"].candidates)
    assert refused
    section = re.search(
        r'<div class="module" id="left-out">(.*?)</table>', response.content.decode(), re.DOTALL
    ).group(1)
    assert "Nothing" not in section
    assert f"It left out {refused} candidate" in section


def test_the_preview_warns_of_a_scope_one_edit_from_an_existing_one(
    reviewer_group, api, desk, remember
):
    remember("The dev database is PostgreSQL 16, on port 5433.", scope_id=SCOPE)
    typo = SCOPE[:-1] + ("x" if SCOPE[-1] != "x" else "y")
    page = preview(desk, "Which port does the dev database use?", scope=typo).content.decode()
    warning = re.search(r'<li class="warning" id="scope-warning">(.*?)</li>', page).group(1)
    assert html.unescape(warning).startswith(f"scope_id {typo!a} holds nothing yet")
    page = preview(desk, "Which port does the dev database use?").content.decode()
    assert 'id="scope-warning"' not in page
