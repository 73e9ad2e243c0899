"""A pack that knows when to stay silent: the six cases where packs and searches used to
answer with entries nothing supported (real model, real vector index, both engines), and
the relevance decision's pure rules."""

import json

import pytest

from powercontext.search import relevance
from powercontext.search.relevance import evidence, numbers
from tests.api_calls import cited, prepare, search_ids
from tests.contextpack.packs import items
from tests.experience.conftest import proposal

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_identifier_no_entry_holds_gets_an_empty_pack(api, remember):
    remember("Deploy with make release zq20c249a9551941", scope_id="r1")
    assert prepare(api, "r1", "zq7f01d3e5b2a4c6e8")["status"] == "empty"
    # The identifier the entry holds still finds it.
    assert prepare(api, "r1", "zq20c249a9551941")["status"] == "ready"


def test_a_retired_entry_is_not_stood_in_for_by_its_neighbour(api, remember):
    old = remember("obsolete deployment note qx41d9e07a3b", scope_id="r2")["entry"]
    remember("current deployment note qx58c2f19e4d", scope_id="r2")
    body = {"scope_id": "r2", "citation": old["citation"]}
    api.ok("/v1/memory/entries/retire", body)
    assert prepare(api, "r2", "qx41d9e07a3b")["status"] == "empty"


def test_text_the_model_cannot_read_gets_no_semantic_only_hit(api, remember):
    first = remember("数据库迁移需要先备份", scope_id="r3")["entry"]["citation"]["entry_id"]
    remember("部署流程在周五冻结", scope_id="r3")
    assert search_ids(api, "r3", "迁移") == [first]
    assert cited(prepare(api, "r3", "数据库迁移")) == [first]


def test_an_identifier_picks_its_experience_not_the_ones_worded_alike(
    reviewer_group, api, propose, approve
):
    scope = "r4"
    identifiers = [
        "zqx3f9a01c7d2e5b8",
        "zqx8e27b4d0c9a163",
        "zqx51c6e8f2a07d94",
        "zqx0d4b9a3e6f1c72",
        "zqx96a2f5c18e0b3d",
    ]
    for identifier in identifiers:
        body = proposal(
            f"When the deploy fails with {identifier}, roll back, then migrate.",
            situation=f"The nightly deploy of the billing worker failed with {identifier}.",
            action="We rolled the release back and ran the migration by hand.",
            outcome="The worker came back once the migration had run.",
        )
        approve(propose(scope_id=scope, proposal=body), scope_id=scope)
    [item] = items(prepare(api, scope, identifiers[2]))
    assert identifiers[2] in json.dumps(item)


def test_a_search_for_a_token_returns_the_entries_that_hold_it(api, remember):
    holders = [
        remember(f"Note {n} about the tk9f3e21 rollout.", scope_id="r5")["entry"]["citation"][
            "entry_id"
        ]
        for n in range(5)
    ]
    remember("unrelated tk2b7c55", scope_id="r5")
    assert sorted(search_ids(api, "r5", "tk9f3e21")) == sorted(holders)


@pytest.mark.parametrize("tag", ["deployment", "rl7q2x"])
def test_a_tag_never_brings_short_entries_without_it_at_any_budget(api, remember, tag):
    scope = f"r6-{tag}"
    steps = (
        "Release checklist step {n}: tag the build, run the smoke tests against staging, "
        "check the error budget on the dashboard, post the change log in the release "
        "channel, wait for the on-call engineer to confirm, then promote the build. "
    )
    tagged = set()
    for n in range(3):
        body = f"Release checklist {tag} (part {n + 1}). " + "".join(
            steps.format(n=step) for step in range(1, 7)
        )
        tagged.add(remember(body, scope_id=scope)["entry"]["citation"]["entry_id"])
    for text in (
        "Release checklist: tag the build and run the smoke tests against staging.",
        "Release checklist: post the change log in the release channel.",
        "Release checklist: wait for the on-call engineer to confirm before promoting.",
        "Release checklist: check the error budget on the dashboard first.",
    ):
        remember(text, scope_id=scope)
    for budget in [*range(512, 8000, 256), 8000]:
        assert set(cited(prepare(api, scope, tag, max_bytes=budget))) <= tagged, budget


def test_a_name_the_scope_never_saw_stays_unanswered_when_the_user_keeps_asking(api, remember):
    # Another conversation's questions asked here, each captured as the hook does: the
    # name recurs in the prompts, and is still a name this scope never saw.
    scope = "r7"
    for text in (
        "[8 May 2023] Melanie: I went to a support group for new parents last night.",
        "[9 May 2023] Melanie: The support group meets every Tuesday at the library.",
        "[12 May 2023] Jon: I painted the fence and planted tomatoes this weekend.",
    ):
        remember(text, scope_id=scope)
    questions = [
        "When did Caroline go to the LGBTQ support group?",
        "What did Caroline research?",
        "What is Caroline's identity?",
        "When did Caroline give a speech at a school?",
        "Where did Caroline move from?",
        "What career path has Caroline decided to pursue?",
    ]
    for number, question in enumerate(questions):
        body = {"scope_id": scope, "source_id": f"q{number}", "content": question}
        api.ok("/v1/sources/content", body, status=202)
    assert prepare(api, scope, "When did Caroline go to a support group meeting?")["status"] == (
        "empty"
    )


PYTHON_NOTES = (
    "Python 3.11 is the version CI runs; the Dockerfile pins the same Python.",
    "Format Python code with ruff format before committing.",
    "The Python dependencies are locked in requirements.txt; update it with pip-compile.",
    "Type-check the Python packages with mypy --strict.",
    "Invoices are rendered to PDF by WeasyPrint in the worker.",
    "Refunds are issued through the payments provider, never by editing a charge.",
    "The staging database is reset every Sunday night from an anonymised dump.",
    "Webhook secrets are rotated every quarter by the on-call engineer.",
    "Feature flags live in the flags table and are cached for sixty seconds.",
    "Emails to customers are sent through the outbox, never straight from a view.",
)


def test_a_name_most_entries_hold_picks_none_of_them_out(api, remember):
    # "Python" in a Python project's notes is one more word: a general question about the
    # language is not answered by every note that mentions it.
    scope = "r8"
    python_notes = {
        remember(text, scope_id=scope)["entry"]["citation"]["entry_id"]
        for text in PYTHON_NOTES
        if "Python" in text
    }
    question = "In Python, how do I reverse a list of strings in place?"
    assert prepare(api, scope, question)["status"] == "empty"
    # Asked alone, the name is what the query is about; and a search keeps every match.
    assert set(cited(prepare(api, scope, "Python"))) <= python_notes
    assert prepare(api, scope, "Python")["status"] == "ready"
    assert python_notes <= set(search_ids(api, scope, "Python"))


RUN_NOTES = (
    "Run the migrations with `make migrate` before you run the test suite.",
    "Run `make test` for the whole suite; it runs pytest with --reuse-db.",
    "The nightly export job runs at 02:00 UTC and retries twice.",
    "Use `make run` to start the dev server on port 8000.",
    "Fix flaky tests by seeding the random generator; a fix that sleeps is not a fix.",
    "Invoices are numbered per tenant, never globally.",
)


@pytest.mark.parametrize(
    "follow_up", ["what did you just run?", "now run it", "run that", "can you fix that?"]
)
def test_a_sentence_around_one_word_does_not_name_it(api, remember, follow_up):
    # An agent's follow-ups have one content word ("run", "fix"): asked alone, a word is
    # what the query names, every entry holding it anchored; in a sentence it is a word
    # like any other, and nothing here answers what the user just said.
    scope = "r7b"
    ids = [remember(text, scope_id=scope)["entry"]["citation"]["entry_id"] for text in RUN_NOTES]
    assert prepare(api, scope, follow_up)["status"] == "empty"
    # The word alone still names what it is asked about.
    assert cited(prepare(api, scope, "fix")) == [ids[4]]


COMMON_WORDS_NOTE = (
    "Notes: tests test run make staging deploy review commit branch change code fix "
    "error build failing logs check config migration database release service worker "
    "repository ticket description acceptance criteria endpoint api customer."
)
WRAPPED = """Ticket PAY-3141: Add a retry to the invoice export

Repository: billing

Description:
The nightly invoice export sometimes fails when the storage bucket times out.

Acceptance criteria:
- Run the full test suite and make sure the build passes before you commit.
- Check the logs of the export worker in staging after the deploy.
- Keep the change small; open a pull request for review.
"""


def test_a_note_of_common_words_is_not_an_answer_to_a_long_prompt(api, remember):
    scope = "r9"
    note = remember(COMMON_WORDS_NOTE, scope_id=scope)["entry"]["citation"]["entry_id"]
    export = remember(
        "The invoice export writes to the exports bucket; its timeout is 30 s, set in "
        "billing/exports/settings.py.",
        scope_id=scope,
    )["entry"]["citation"]["entry_id"]
    for text in PYTHON_NOTES:
        remember(text, scope_id=scope)
    pack = cited(prepare(api, scope, WRAPPED))
    assert export in pack
    assert note not in pack
    # A search keeps every entry its words found.
    assert note in search_ids(api, scope, "staging deploy logs")


def test_an_identifier_is_held_whole_not_by_a_number_of_it(api, remember):
    # "net 14" holds the 14 of release-3.14.2-rc1, not the release: the question is about
    # a version string the scope never saw.
    remember(
        "Default payment terms are net 14 days; enterprise contracts set their own.", scope_id="r9"
    )
    remember("Invoices are numbered per legal entity and fiscal year.", scope_id="r9")
    prompt = "Write a regex that pulls the version out of strings like 'release-3.14.2-rc1'."
    assert prepare(api, "r9", prompt)["status"] == "empty"
    # The whole identifier still finds the entry that holds it.
    held = remember("The hotfix shipped as release-3.14.2-rc1 on Monday.", scope_id="r9")
    assert cited(prepare(api, "r9", prompt)) == [held["entry"]["citation"]["entry_id"]]


# -- the pure rules ----------------------------------------------------------------------


def anchors(text):
    return relevance.anchor_terms(relevance.anchor_names(text))


def test_anchors_are_names_and_identifiers_not_sentence_starts_or_acronyms():
    assert anchors("Deploy with make release zq20c249a9551941") == {"zq20c249a9551941"}
    assert anchors("- Add a test for Foo\n- Build it") == {"foo"}
    assert anchors("When did Caroline go to the support group?") == {"carolin"}
    assert anchors("Follow AGENTS.md, then ask about GraphQL.") == {"graphql"}
    assert anchors("Ticket HAR-1101: fix cancel_at") == {"har", "1101", "cancel_at"}
    assert anchors("Can I ship this to prod on Friday, or wait for May?") == set()


def test_capitalised_words_one_space_apart_name_one_thing():
    names = relevance.anchor_names
    assert names("Does the app support iPad multitasking / Split View?") == {
        frozenset({"ipad"}),
        frozenset({"split", "view"}),
    }
    # An acronym, a sentence start, punctuation or two spaces end the name; an identifier
    # stays its own.
    assert names("Do we buy AWS Savings Plans, Reserved Instances?") == {
        frozenset({"save", "plan"}),
        frozenset({"reserv", "instanc"}),
    }
    assert names("Project: Platform Infrastructure  Labels: ops") == {
        frozenset({"infrastructur"}),
        frozenset({"label"}),
    }
    assert names("Ask Kenji Tanaka about HAR-1101 Billing") == {
        frozenset({"kenji", "tanaka"}),
        frozenset({"har", "1101"}),
        frozenset({"bill"}),
    }


def test_an_entry_holds_a_name_when_it_holds_all_its_terms():
    names = relevance.anchor_names("Ticket HAR-1101, release-3.14.2-rc1 and cancel_at")
    assert names == {
        frozenset({"har", "1101"}),
        frozenset({"releas", "3", "14", "2", "rc1"}),
        frozenset({"cancel_at"}),
    }
    assert relevance.anchor_terms(names) == {"har", "1101", "releas", "14", "rc1", "cancel_at"}
    assert relevance.anchors.held(names, {"net", "14", "har", "cancel_at"}) == {"cancel_at"}
    assert relevance.anchors.held(names, {"har", "1101", "fix"}) == {"har", "1101"}


def test_a_long_name_is_held_by_all_its_words_but_one_and_a_short_one_by_all():
    held = relevance.anchors.held
    city = relevance.anchor_names("How was John's trip to New York City?")
    assert held(city, {"new", "york", "trip"}) == {"new", "york"}  # "New York"
    assert held(city, {"york"}) == set()
    split = relevance.anchor_names("Does the app support Split View?")
    assert held(split, {"split", "payment"}) == set()
    # An identifier is held whole, however long.
    release = relevance.anchor_names("release-3.14.2-rc1")
    assert held(release, {"releas", "3", "14", "2"}) == set()


def test_an_anchor_picks_entries_out_while_few_hold_it():
    assert relevance.picks_out("python", 2, 100)
    assert not relevance.picks_out("python", 3, 100)
    assert relevance.picks_out("carolin", 10, 500)
    assert not relevance.picks_out("carolin", 250, 500)
    # An identifier always does, however many entries hold it.
    assert relevance.picks_out("zq20c249", 90, 100)
    assert relevance.picks_out("cancel_at", 90, 100)


def test_spread_is_the_share_of_segments_holding_a_word():
    weights = {"run": 1.0, "test": 1.0, "deploy": 1.0, "log": 1.0}
    segments = [["run", "test"], ["deploy"], ["log", "the"], ["the"]]
    assert evidence.spread({"run", "deploy"}, weights, segments) == pytest.approx(2 / 3)
    # Fewer than three segments with a searchable word: not a long prompt.
    assert evidence.spread({"run", "deploy"}, weights, segments[:2]) == 0.0


def test_a_word_list_is_left_out_of_a_pack_but_kept_by_a_search():
    word_list = relevance.Evidence(
        key="list",
        lexical=True,
        similarity=0.6,
        coverage=1.0,
        terms=frozenset(),
        readable=True,
        held=numbers.WORD_LIST_HELD,
        spread=numbers.WORD_LIST_SPREAD,
    )
    answer = _evidence("answer", 0.6, lexical=True, coverage=0.8)
    assert _judge([word_list, answer]) == [relevance.Verdict.WORD_LIST, relevance.Verdict.WORDS]
    assert _judge([word_list, answer], pack=False) == [relevance.Verdict.WORDS_KEPT] * 2


def test_readable_text_is_mostly_latin_letters():
    assert relevance.readable("Run the tests, café 42")
    assert relevance.readable("1234 ---")
    assert not relevance.readable("数据库迁移需要先备份")


def _evidence(key, similarity, *, lexical=False, coverage=0.0, terms=(), readable=True):
    return relevance.Evidence(
        key=key,
        lexical=lexical,
        similarity=similarity,
        coverage=coverage,
        terms=frozenset(terms),
        readable=readable,
    )


def _judge(candidates, *, pack=True, known=(), unknown=(), anchors_only=False, single=True):
    return [
        judgement.verdict
        for judgement in relevance.judge(
            candidates,
            relevance.QueryFacts(
                picking=frozenset(known),
                unknown=frozenset(unknown),
                anchors_only=anchors_only,
                single_segment=single,
                readable=True,
                pack=pack,
            ),
        )
    ]


def test_a_search_keeps_every_candidate_its_words_found():
    found = _judge(
        [_evidence("a", 0.1, lexical=True), _evidence("b", 0.05, lexical=True)], pack=False
    )
    assert found == [relevance.Verdict.WORDS_KEPT, relevance.Verdict.WORDS_KEPT]


def test_a_pack_is_empty_when_nothing_has_strong_evidence():
    verdicts = _judge(
        [
            _evidence("a", 0.25, lexical=True, coverage=0.5),
            _evidence("b", 0.29, lexical=True, coverage=0.55),
        ]
    )
    assert verdicts == [relevance.Verdict.NOTHING_ANSWERS, relevance.Verdict.NOTHING_ANSWERS]
    # One candidate near in meaning answers, and the other's words then count.
    verdicts = _judge([_evidence("a", 0.25, lexical=True, coverage=0.5), _evidence("b", 0.5)])
    assert verdicts == [relevance.Verdict.WORDS, relevance.Verdict.MEANING]


def test_meaning_alone_must_come_near_the_best_candidate():
    verdicts = _judge([_evidence("a", 0.7), _evidence("b", 0.5)])
    assert verdicts == [relevance.Verdict.MEANING, relevance.Verdict.FAR_FROM_BEST]


def test_an_anchor_matched_somewhere_leaves_out_neighbours_without_it():
    verdicts = _judge(
        [_evidence("a", 0.3, lexical=True, terms={"x1"}), _evidence("b", 0.9)],
        known={"x1"},
        anchors_only=True,
    )
    assert verdicts == [relevance.Verdict.ANCHORED, relevance.Verdict.NOT_ANCHORED]


def test_a_name_the_scope_never_saw_makes_its_neighbours_no_evidence():
    verdicts = _judge([_evidence("a", 0.35), _evidence("b", 0.5)], unknown={"carolin"})
    assert verdicts[0] == relevance.Verdict.UNKNOWN_ANCHOR
    # Strongly similar still counts.
    assert verdicts[1] == relevance.Verdict.MEANING


def test_a_pack_answers_a_segment_whose_every_word_an_entry_holds():
    # "lorem ipsum": the model cannot read it (cosine 0.22), but the entry holds it all.
    whole = relevance.Evidence("a", True, 0.22, 1.0, frozenset({"lorem", "ipsum"}), True, held=2)
    assert _judge([whole]) == [relevance.Verdict.WORDS]
    # One word is not a segment's worth of evidence ("go on": "go").
    one = relevance.Evidence("a", True, 0.22, 1.0, frozenset({"go"}), True, held=1)
    assert _judge([one]) == [relevance.Verdict.NOTHING_ANSWERS]


def test_a_name_that_picks_entries_out_answers_with_some_meaning_behind_it():
    # "How do I regenerate the Swift bindings for the iOS app?" in a project with no iOS
    # app: "iOS" matched the notes naming Fly.io, far in meaning (0.13).
    far = _evidence("fly", 0.13, lexical=True, coverage=0.4, terms={"io"})
    assert _judge([far], known={"io"}) == [relevance.Verdict.NOTHING_ANSWERS]
    # As near as any other evidence must be, it answers.
    near = _evidence("ios", 0.3, lexical=True, coverage=0.4, terms={"io"})
    assert _judge([near], known={"io"}) == [relevance.Verdict.ANCHORED]
    # The name asked alone is what the prompt asks for.
    assert _judge([far], known={"io"}, anchors_only=True) == [relevance.Verdict.ANCHORED]
    # Where the cosine says nothing (no vector yet, a script the model cannot read), the
    # name is the evidence.
    unmeasured = _evidence("new", None, lexical=True, coverage=0.4, terms={"io"})
    assert _judge([unmeasured], known={"io"}) == [relevance.Verdict.ANCHORED]
    unread = _evidence("cjk", 0.13, lexical=True, coverage=0.4, terms={"io"}, readable=False)
    assert _judge([unread], known={"io"}) == [relevance.Verdict.ANCHORED]


def _holding_name(key, similarity, *, subjects=(), readable=True):
    # Found by its words: it holds "terraform", a name of the query (most of the scope's
    # entries hold it, or few do: ``_judge_name``'s ``common``).
    return relevance.Evidence(
        key=key,
        lexical=True,
        similarity=similarity,
        coverage=0.2,
        terms=frozenset({"terraform", *subjects}),
        readable=readable,
        subjects=frozenset(subjects),
        held=1 + len(subjects),
    )


def _judge_name(candidates, *, single=True, pack=True, common=True):
    facts = relevance.QueryFacts(
        common=frozenset({"terraform"}) if common else frozenset(),
        picking=frozenset() if common else frozenset({"terraform"}),
        single_segment=single,
        readable=True,
        subjects=frozenset({"expressions", "try"}),
        pack=pack,
    )
    return [judgement.verdict for judgement in relevance.judge(candidates, facts)]


def test_a_name_most_entries_hold_admits_only_the_entries_near_the_best():
    # "How does try() differ from can() in Terraform expressions?" in a Terraform estate:
    # every note naming Terraform used to be admitted as anchored.
    spread = numbers.NAME_SPREAD
    best = _evidence("answer", 0.5)
    near = _holding_name("near", 0.5 - spread + 0.01)
    far = _holding_name("far", 0.5 - spread - 0.01)
    assert _judge_name([best, near, far]) == [
        relevance.Verdict.MEANING,
        relevance.Verdict.ANCHORED,
        relevance.Verdict.WEAK_WORDS,  # judged on its other evidence: a word or two
    ]
    # One that also holds another subject of the question still speaks to it.
    also = _holding_name("also", 0.5 - spread - 0.01, subjects={"expressions"})
    assert _judge_name([best, also])[1] is relevance.Verdict.ANCHORED
    # In a script the model cannot read, the cosine says nothing: the name still counts.
    unread = _holding_name("unread", 0.5 - spread - 0.01, readable=False)
    assert _judge_name([best, unread])[1] is relevance.Verdict.ANCHORED
    # A long prompt's best candidate is whichever echoes its instructions; and a search
    # keeps what its words found.
    assert _judge_name([best, far], single=False)[1] is relevance.Verdict.ANCHORED
    assert _judge_name([best, far], pack=False)[1] is relevance.Verdict.ANCHORED


def test_a_name_few_entries_hold_admits_only_the_entries_near_the_best_too():
    # "The gate change never shows up on the Dynamic Island": the note on Dynamic Type
    # was admitted as anchored, however far it was in meaning.
    spread = numbers.NAME_SPREAD
    best = _evidence("answer", 0.5)
    near = _holding_name("near", 0.5 - spread + 0.01)
    far = _holding_name("far", 0.5 - spread - 0.01)
    assert _judge_name([best, near, far], common=False) == [
        relevance.Verdict.MEANING,
        relevance.Verdict.ANCHORED,
        relevance.Verdict.WEAK_WORDS,
    ]
    # An identifier names exactly one thing: an entry holding it stays anchored however
    # far in meaning ("HAR-1101" in a ticket's note).
    ticket = relevance.Evidence(
        key="ticket",
        lexical=True,
        similarity=0.5 - spread - 0.01,
        coverage=0.2,
        terms=frozenset({"har", "1101"}),
        readable=True,
        held=2,
    )
    facts = relevance.QueryFacts(
        picking=frozenset({"har", "1101"}),
        single_segment=True,
        readable=True,
        subjects=frozenset({"expressions", "try"}),
        pack=True,
    )
    verdicts = [judgement.verdict for judgement in relevance.judge([best, ticket], facts)]
    assert verdicts[1] is relevance.Verdict.ANCHORED
