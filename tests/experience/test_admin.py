"""The reviewer's desk in the Django admin (DESIGN.md §8)."""

import html
import re

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Group, Permission

from experience.admin import _status_counts
from experience.models import Candidate, CandidateVersion
from powercontext.models import ArtifactRevision
from tests.experience.conftest import SCOPE

pytestmark = pytest.mark.django_db

QUEUE = "/admin/experience/candidate/"


@pytest.fixture
def desk(client, reviewer):
    reviewer.is_staff = True
    reviewer.set_password("pw-for-tests")
    reviewer.save()
    client.force_login(reviewer)
    return client


@pytest.fixture
def looker(client, django_user_model):
    """Staff that may look at everything the reviewers see, but decide nothing."""
    user = django_user_model.objects.create_user("lou", is_staff=True)
    group = Group.objects.get(name="Experience reviewers")
    user.user_permissions.set(group.permissions.exclude(codename="review_candidate"))
    client.force_login(user)
    return client


def _detail(candidate):
    # quote(): admin URLs escape "_" sequences; an unquoted id that happens to contain
    # one (e.g. "cand_22...") would not resolve back to itself.
    return f"{QUEUE}{quote(candidate['candidate_id'])}/change/"


def _action(candidate, action):
    return f"{QUEUE}{quote(candidate['candidate_id'])}/{action}/"


def test_queue_lists_pending_newest_first_with_counts(desk, propose, approve):
    older, newer = propose("Older lesson."), propose("Newer lesson.")
    approve(propose("Done lesson."))
    page = desk.get(QUEUE).content.decode()
    assert page.index(newer["candidate_id"]) < page.index(older["candidate_id"])
    assert "Done lesson." not in page
    assert 'id="count-pending">2<' in page
    assert 'id="count-approved">1<' in page
    approved = desk.get(QUEUE + "?status=approved").content.decode()
    assert "Done lesson." in approved
    assert "Older lesson." not in approved
    other_scope = desk.get(QUEUE + "?scope=scope-b").content.decode()
    assert older["candidate_id"] not in other_scope


def test_status_counts_take_one_query(propose, approve, django_assert_num_queries):
    propose("Older lesson.")
    propose("Other scope.", scope_id="scope-b")
    approve(propose("Done lesson."))
    with django_assert_num_queries(1):
        counts = _status_counts(Candidate.objects.filter(scope_id=SCOPE))
    assert counts == {"pending": 1, "approved": 1, "rejected": 0}


def test_detail_shows_proposal_beside_linked_evidence(desk, api, propose, remember):
    memory = remember("Importer tests live in tests/importer.")
    api.ok(
        "/v1/sources/content",
        {"scope_id": SCOPE, "source_id": "prompt-1", "content": "The importer broke again."},
        status=202,
    )
    candidate = propose(artifact_refs=[memory["memory"]])
    page = desk.get(_detail(candidate)).content.decode()
    assert "A schema change broke the nightly import." in page
    assert "The importer broke again." in page
    assert "/admin/powercontext/sourcerecord/" in page
    assert "/admin/powercontext/artifactrevision/" in page
    version_id = memory["entry"]["citation"]["entry_version_id"]
    assert f"/admin/memory/memoryentryversion/{quote(version_id)}/" in page
    assert "Importer tests live in tests/importer." in page
    assert 'id="approve-link"' in page


def test_approve_needs_a_confirmation_then_calls_the_service(desk, propose, reviewer):
    candidate = propose()
    confirm = desk.get(_action(candidate, "approve"))
    assert confirm.status_code == 200
    assert b"Yes, approve" in confirm.content
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"
    done = desk.post(_action(candidate, "approve"), {"expected_version": 1}, follow=True)
    assert b"Approved" in done.content
    decided = Candidate.objects.get(pk=candidate["candidate_id"])
    assert decided.status == "approved"
    assert decided.decided_by == reviewer
    assert ArtifactRevision.objects.filter(family="experience").count() == 1
    again = desk.post(_action(candidate, "approve"), {"expected_version": 1}, follow=True)
    assert b"already been decided" in again.content
    assert ArtifactRevision.objects.filter(family="experience").count() == 1


def test_stale_page_is_a_conflict_message(desk, propose, reviewer_api):
    candidate = propose()
    reviewer_api.ok(
        "/v1/artifact-candidates/revise",
        {
            "scope_id": SCOPE,
            "candidate_id": candidate["candidate_id"],
            "expected_version": 1,
            "proposal": {**candidate["proposal"], "lesson": "Reworded."},
        },
    )
    response = desk.post(_action(candidate, "approve"), {"expected_version": 1}, follow=True)
    assert b"newer version" in response.content
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"


def test_reject_requires_a_reason(desk, propose):
    candidate = propose()
    blank = desk.post(_action(candidate, "reject"), {"expected_version": 1, "reason": "  "})
    assert blank.status_code == 200
    assert b"Must contain a non-space character" in blank.content
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"
    desk.post(_action(candidate, "reject"), {"expected_version": 1, "reason": "Anecdote."})
    rejected = Candidate.objects.get(pk=candidate["candidate_id"])
    assert (rejected.status, rejected.decision_reason) == ("rejected", "Anecdote.")


def test_revise_shows_the_new_version_before_writing_it(desk, propose):
    candidate = propose()
    form = {
        "expected_version": 1,
        "situation": "S2",
        "action": "A2",
        "outcome": "O2",
        "lesson": "L2",
        "reason": "",
    }
    preview = desk.post(_action(candidate, "revise"), form)
    assert b"Version 2 will read" in preview.content
    assert CandidateVersion.objects.filter(candidate_id=candidate["candidate_id"]).count() == 1
    desk.post(_action(candidate, "revise"), {**form, "confirmed": "True"})
    head = Candidate.objects.get(pk=candidate["candidate_id"])
    assert head.version == 2
    assert CandidateVersion.objects.get(candidate=head, version=2).lesson == "L2"


def test_staff_without_review_permission_can_look_but_not_decide(looker, propose):
    candidate = propose()
    assert looker.get(QUEUE).status_code == 200
    page = looker.get(_detail(candidate))
    assert page.status_code == 200
    assert b'id="approve-link"' not in page.content
    assert b"not decide" in page.content
    for action in ("approve", "reject", "revise"):
        assert looker.get(_action(candidate, action)).status_code == 403
        assert looker.post(_action(candidate, action), {"expected_version": 1}).status_code == 403
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"


def test_experience_and_memory_are_browsable_read_only(desk, propose, approve, remember):
    remember("A memory to browse.")
    artifact = approve(propose("Browse me."))["result_artifact"]
    experiences = desk.get("/admin/experience/experience/").content.decode()
    assert artifact["artifact_id"] in experiences
    assert "Browse me." in experiences
    for url in (
        "/admin/memory/memoryentryversion/",
        "/admin/memory/memorymanifestrow/",
        "/admin/powercontext/artifactrevision/",
        "/admin/powercontext/sourcerecord/",
    ):
        assert desk.get(url).status_code == 200, url
        assert desk.get(url + "add/").status_code == 403, url
    from experience.models import Experience

    head = Experience.objects.get(artifact_id=artifact["artifact_id"])
    detail = desk.get(f"/admin/experience/experience/{head.pk}/change/").content.decode()
    assert "approved by rita" in detail
    assert "Browse me." in detail


def test_reviewer_group_has_the_review_permission():
    group = Group.objects.get(name="Experience reviewers")
    assert group.permissions.filter(codename="review_candidate").exists()
    assert Permission.objects.filter(codename="view_experience").exists()


# -- stored text, exactly (issue 14.5 / 14.6) ------------------------------------------

TEXTAREA = re.compile(r'<textarea name="(\w+)"[^>]*>\n?(.*?)</textarea>', re.S)
HIDDEN = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)"', re.S)


def _as_browser_submits(raw: str) -> str:
    """What a browser submits for a form value written as ``raw`` in the page: the HTML
    parser turns CRLF and CR into LF and NUL into U+FFFD, the form encoding submits every
    line break as CRLF (tests/powercontext/test_visible_text.py checks the same model)."""
    parsed = html.unescape(raw).replace("\r\n", "\n").replace("\r", "\n")
    return parsed.replace("\x00", "\ufffd").replace("\n", "\r\n")


def _submit_as_is(page: bytes, pattern=TEXTAREA) -> dict[str, str]:
    fields = dict(HIDDEN.findall(page.decode()))
    fields.pop("csrfmiddlewaretoken", None)
    fields.update(pattern.findall(page.decode()))
    return {name: _as_browser_submits(value) for name, value in fields.items()}


TRICKY = {
    "situation": "Line one\nline two\rafter a lone CR\r\nand CRLF.",
    "action": "Kept a NUL \x00 byte and ⟨U+0000⟩ written literally.",
    "outcome": "Windows text\r\nwith CRLF\r\nonly.",
    "lesson": "Bidi \u202egnp.exe and a zero\u200bwidth space.",
}


def test_revise_without_edits_writes_nothing(desk, propose):
    candidate = propose(proposal=TRICKY)
    form = desk.get(_action(candidate, "revise"))
    assert b"\x00" not in form.content
    posted = desk.post(_action(candidate, "revise"), _submit_as_is(form.content), follow=True)
    assert b"No changes" in posted.content
    assert CandidateVersion.objects.filter(candidate_id=candidate["candidate_id"]).count() == 1
    version = CandidateVersion.objects.get(candidate_id=candidate["candidate_id"])
    assert {name: getattr(version, name) for name in TRICKY} == TRICKY


def test_revise_of_one_field_keeps_the_others_byte_for_byte(desk, propose):
    candidate = propose(proposal=TRICKY)
    fields = _submit_as_is(desk.get(_action(candidate, "revise")).content)
    fields["lesson"] = "A reworded lesson.\r\nSecond line."
    preview = desk.post(_action(candidate, "revise"), fields)
    assert b"Version 2 will read" in preview.content
    confirmed = _submit_as_is(preview.content, pattern=HIDDEN)
    desk.post(_action(candidate, "revise"), confirmed)
    version = CandidateVersion.objects.get(candidate_id=candidate["candidate_id"], version=2)
    assert version.lesson == "A reworded lesson.\nSecond line."
    for name in ("situation", "action", "outcome"):
        assert getattr(version, name) == TRICKY[name], name


def test_a_full_length_field_with_newlines_can_be_revised(desk, propose):
    long_field = ("x" * 9 + "\n") * 800  # 8,000 characters, 800 of them line breaks
    candidate = propose(proposal={**TRICKY, "situation": long_field})
    fields = _submit_as_is(desk.get(_action(candidate, "revise")).content)
    fields["lesson"] = "Changed."
    preview = desk.post(_action(candidate, "revise"), fields)
    assert b"Version 2 will read" in preview.content, preview.content.decode()[-3000:]
    desk.post(_action(candidate, "revise"), _submit_as_is(preview.content, pattern=HIDDEN))
    version = CandidateVersion.objects.get(candidate_id=candidate["candidate_id"], version=2)
    assert version.situation == long_field


def test_revise_refuses_what_the_api_refuses(desk, propose):
    candidate = propose()
    fields = _submit_as_is(desk.get(_action(candidate, "revise")).content)
    too_long = desk.post(_action(candidate, "revise"), {**fields, "lesson": "x" * 8001})
    assert b"no more than 8000 characters" in too_long.content
    blank = desk.post(_action(candidate, "revise"), {**fields, "lesson": " \r\n "})
    assert b"Must contain a non-space character" in blank.content
    assert CandidateVersion.objects.filter(candidate_id=candidate["candidate_id"]).count() == 1


def test_reject_reason_counts_line_breaks_once(desk, propose):
    candidate = propose()
    reason = "why\r\n" * 400  # 1,600 characters as the API counts them, 2,000 as CRLF
    desk.post(_action(candidate, "reject"), {"expected_version": 1, "reason": reason + "x" * 399})
    rejected = Candidate.objects.get(pk=candidate["candidate_id"])
    assert rejected.status == "rejected"
    assert rejected.decision_reason == "why\n" * 400 + "x" * 399


def test_detail_marks_hidden_characters_and_stays_escaped(desk, propose):
    candidate = propose(proposal={**TRICKY, "outcome": "<script>alert(1)</script> " + "y" * 7900})
    page = desk.get(_detail(candidate)).content.decode()
    assert "\u202e" not in page
    assert "\u200b" not in page
    assert "⟨U+202E⟩" in page
    assert "⟨U+200B⟩" in page
    assert "⟨U+0000⟩" in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "powercontext/desk.css" in page
    # The stored text is untouched.
    version = CandidateVersion.objects.get(candidate_id=candidate["candidate_id"])
    assert version.lesson == TRICKY["lesson"]


TIME = re.compile(r'<time datetime="[^"]+"[^>]*>(.*?)</time>', re.S)
HUMAN = re.compile(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC")


def _shown_times(page: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", shown) for shown in TIME.findall(page)]


def test_queue_and_detail_show_human_dates(desk, propose, approve):
    candidate = propose("Dated lesson.")
    approve(propose("Approved lesson."))
    raw = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
    for url in (QUEUE, QUEUE + "?status=all", _detail(candidate)):
        page = desk.get(url).content.decode()
        assert not raw.search(page), url
        shown = _shown_times(page)
        assert shown, url
        assert all(HUMAN.fullmatch(time) for time in shown), (url, shown)
    experiences = desk.get("/admin/experience/experience/").content.decode()
    assert not raw.search(experiences)


def test_evidence_says_a_cited_entry_was_retired_since(desk, api, propose, remember):
    memory = remember("Importer retries live in jobs/nightly.py.")
    candidate = propose(artifact_refs=[memory["memory"]])
    fresh = desk.get(_detail(candidate)).content.decode()
    assert "active at the cited revision and now" in fresh
    api.ok(
        "/v1/memory/entries/retire",
        {"scope_id": SCOPE, "citation": memory["entry"]["citation"], "reason": "Moved."},
    )
    page = desk.get(_detail(candidate)).content.decode()
    assert "active at the cited revision; retired now" in page
    assert "Importer retries live in jobs/nightly.py." in page


def test_queue_truncates_long_lessons(desk, propose):
    lesson = "word " * 200
    candidate = propose(lesson)
    queue = desk.get(QUEUE).content.decode()
    assert lesson.strip() not in queue
    assert "word word" in queue
    assert lesson in html.unescape(desk.get(_detail(candidate)).content.decode())


def test_queue_shows_who_decided_when_the_user_is_not_on_this_server(desk, propose, approve):
    # An imported decision keeps the reviewer's name but no user of this server.
    candidate = propose("Imported lesson.")
    approve(candidate)
    Candidate.objects.filter(pk=candidate["candidate_id"]).update(decided_by=None)
    listed = desk.get(QUEUE + "?status=approved").content.decode()
    assert re.search(r'<td class="field-decider">rita</td>', listed), listed
    assert "approved by rita" in desk.get(_detail(candidate)).content.decode()
