"""The backend-neutral term selection and weights (powercontext.search.policy). Pure: no
database. ``select_terms`` is the first candidate query; ``plan_search`` what weighs."""

from hypothesis import given
from hypothesis import strategies as st

from powercontext.search import policy
from powercontext.search.policy import (
    COMMON_TERM_SHARE,
    MAX_QUERY_TERMS,
    MIN_DOCUMENTS_FOR_PRUNING,
    MIN_PROMPTS_FOR_RECURRING,
    RECURRING_PROMPT_SHARE,
    RECURRING_TERM_WEIGHT,
    STOP_TERMS,
    STOP_WORDS,
    plan_search,
    recurring_terms,
    select_terms,
    term_weight,
)

words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
queries = st.lists(st.one_of(words, st.sampled_from(sorted(STOP_WORDS))), unique=True)


@st.composite
def indexes(draw):
    terms = draw(queries)
    documents = draw(st.integers(min_value=0, max_value=10_000))
    frequency = {term: draw(st.integers(min_value=0, max_value=documents)) for term in terms}
    return terms, frequency, documents


def test_rare_terms_come_first_and_unknown_terms_are_dropped():
    frequency = {"deploy": 40, "flaky": 3, "migration": 12}
    assert select_terms(["deploy", "ghost", "flaky", "migration"], frequency, 1000) == [
        "flaky",
        "migration",
        "deploy",
    ]


def test_terms_in_too_many_documents_leave_the_first_query_once_the_index_is_large():
    documents = 1000
    common = int(COMMON_TERM_SHARE * documents) + 1
    frequency = {"tests": common, "pytest": 5}
    assert select_terms(["tests", "pytest"], frequency, documents) == ["pytest"]


def test_a_small_index_prunes_nothing_by_share():
    documents = MIN_DOCUMENTS_FOR_PRUNING - 1
    frequency = {"tests": documents, "pytest": 1}
    assert select_terms(["tests", "pytest"], frequency, documents) == ["pytest", "tests"]


def test_function_words_are_never_searched_even_when_the_scope_has_them_once():
    # A few hundred chatty entries may hold "before" or "which" once: counted as rare,
    # they would pull unrelated entries into every pack of a long prompt.
    frequency = {"before": 1, "which": 1, "anything": 2, "picnic": 2, "don": 1, "t": 1}
    query = ["before", "which", "anything", "picnic", "don", "t"]
    assert select_terms(query, frequency, 400) == ["picnic"]


def test_a_lone_particle_or_kana_is_never_searched_but_the_words_it_starts_are():
    # The analyzer indexes CJK as single characters and bigrams: a particle held by every
    # entry written in the language (の, を, 에, 的) would pull each of them in.
    from powercontext.search import analyzer

    for prompt, stop, kept in (
        ("デプロイの設定を確認", {"の", "を", "デ"}, {"設定", "確認", "デプ"}),
        ("서버에 연결", {"에", "서"}, {"서버", "연결"}),
        ("支付的回调", {"的"}, {"支付", "回调"}),
    ):
        terms = analyzer.query_terms(prompt)
        assert stop <= set(terms)
        assert kept <= set(terms)
        selected = select_terms(terms, dict.fromkeys(terms, 3), 400)
        assert not stop & set(selected)
        assert kept <= set(selected)


def test_a_query_of_function_words_only_selects_nothing():
    assert select_terms(["what", "is", "it"], {"what": 3, "is": 3, "it": 3}, 400) == []


def test_ties_keep_the_query_order():
    frequency = {"zeta": 2, "alpha": 2, "mid": 2}
    assert select_terms(["zeta", "alpha", "mid"], frequency, 500) == ["zeta", "alpha", "mid"]


def test_every_stop_word_is_a_stop_term_in_the_form_the_analyzer_gives():
    from powercontext.search import analyzer

    for word in STOP_WORDS:
        (token,) = analyzer.query_terms(word)
        assert token in STOP_TERMS


def test_recurring_terms_leave_the_first_query():
    frequency = {"orca": 1, "staging": 4, "diff": 2}
    assert select_terms(["diff", "orca", "staging"], frequency, 400, {"diff"}) == [
        "orca",
        "staging",
    ]


def test_common_and_recurring_terms_weigh_less_but_still_weigh():
    documents = 1000
    common = int(COMMON_TERM_SHARE * documents) + 1
    frequency = {"billing": common, "refund": 5, "diff": 5}
    plan = plan_search(["billing", "refund", "diff", "the"], frequency, documents, {"diff"})
    assert plan.match == ("refund",)
    assert plan.fallback == ("diff", "billing")
    assert set(plan.weights) == {"billing", "refund", "diff"}
    assert 0 < plan.weights["billing"] < plan.weights["refund"]
    assert plan.weights["diff"] == RECURRING_TERM_WEIGHT * plan.weights["refund"]


def test_recurring_terms_find_candidates_where_the_prompt_asks_with_them():
    frequency = {"billing": 6, "diff": 3, "sync": 4}
    alone = plan_search(["billing", "the"], frequency, 20, {"billing"}, [["billing", "the"]])
    assert alone.fallback == ("billing",)
    # In the question's own segment, beside a word the scope does not know.
    asked = plan_search(["sync", "mode"], frequency, 20, {"sync"}, [["sync", "mode"]])
    assert asked.fallback == ("sync",)
    # In a segment of instructions only, around a question the scope cannot answer.
    around = plan_search(
        ["review", "diff", "importer"],
        frequency,
        20,
        {"review", "diff"},
        [["review", "diff"], ["importer"]],
    )
    assert around.match == ()
    assert around.fallback == ()
    assert set(around.weights) == {"diff"}


def test_a_query_of_common_terms_only_still_has_terms_to_search():
    # The old rule dropped every term here: a scope's main topic found nothing.
    documents = 50
    plan = plan_search(["billing", "invoic"], {"billing": 8, "invoic": 8}, documents)
    assert plan.match == ()
    assert plan.fallback == ("billing", "invoic")


def test_weights_fall_as_terms_get_commoner_and_stay_positive():
    weights = [term_weight(df, 1000) for df in (1, 10, 150, 151, 999, 1000)]
    assert weights == sorted(weights, reverse=True)
    assert weights[-1] > 0


@given(indexes(), st.data())
def test_the_plan_weighs_every_known_content_term_and_only_those(index, data):
    terms, frequency, documents = index
    recurring = frozenset(data.draw(st.lists(st.sampled_from(terms))) if terms else [])
    plan = plan_search(terms, frequency, documents, recurring)
    eligible = [t for t in terms if frequency.get(t, 0) > 0 and t not in STOP_TERMS]
    assert set(plan.match) | set(plan.fallback) <= set(plan.weights) <= set(eligible)
    assert set(plan.weights) - set(plan.match) - set(plan.fallback) <= recurring
    assert not set(plan.match) & set(plan.fallback)
    if len(eligible) <= MAX_QUERY_TERMS:
        assert set(plan.weights) == set(eligible)
    assert all(weight > 0 for weight in plan.weights.values())


def test_too_few_earlier_prompts_make_no_term_recurring():
    prompts = [frozenset({"diff", "push"})] * (MIN_PROMPTS_FOR_RECURRING - 1)
    assert recurring_terms(["diff", "orca"], prompts) == frozenset()


def test_a_term_recurs_from_the_share_of_earlier_prompts_it_is_in():
    size = 2 * MIN_PROMPTS_FOR_RECURRING
    needed = int(RECURRING_PROMPT_SHARE * size)
    # diff is in just enough of the prompts, push in one prompt fewer.
    prompts = [
        frozenset({"diff"} if n < needed else {"misc"}) | ({"push"} if n < needed - 1 else set())
        for n in range(size)
    ]
    assert recurring_terms(["diff", "push", "orca"], prompts) == frozenset({"diff"})


@given(
    st.lists(st.frozensets(words, max_size=6), max_size=30),
    st.lists(words, max_size=10, unique=True),
)
def test_recurring_terms_are_query_terms_in_the_share_of_prompts(prompts, query):
    found = recurring_terms(query, prompts)
    assert found <= set(query)
    for term in query:
        share = sum(term in prompt for prompt in prompts) / max(len(prompts), 1)
        expected = len(prompts) >= MIN_PROMPTS_FOR_RECURRING and share >= RECURRING_PROMPT_SHARE
        assert (term in found) == expected


@given(indexes())
def test_selection_is_a_bounded_rarest_first_subset_of_the_query(index):
    terms, frequency, documents = index
    selected = select_terms(terms, frequency, documents)
    assert len(selected) <= MAX_QUERY_TERMS
    assert len(set(selected)) == len(selected)
    assert set(selected) <= set(terms)
    assert not set(selected) & STOP_TERMS
    assert all(frequency.get(term, 0) > 0 for term in selected)
    counts = [frequency[term] for term in selected]
    assert counts == sorted(counts)
    if documents >= MIN_DOCUMENTS_FOR_PRUNING:
        assert all(count <= COMMON_TERM_SHARE * documents for count in counts)


@given(indexes())
def test_every_eligible_term_rarer_than_a_selected_one_is_selected(index):
    terms, frequency, documents = index
    selected = select_terms(terms, frequency, documents)
    if len(selected) < MAX_QUERY_TERMS:
        limit = COMMON_TERM_SHARE * documents
        eligible = {
            term
            for term in terms
            if term not in STOP_TERMS
            and frequency.get(term, 0) > 0
            and (documents < MIN_DOCUMENTS_FOR_PRUNING or frequency[term] <= limit)
        }
        assert set(selected) == eligible


def test_the_policy_module_imports_no_django():
    import ast
    from pathlib import Path

    tree = ast.parse(Path(policy.__file__).read_text())
    modules = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    modules |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in modules if name.split(".")[0] == "django"}


@given(indexes(), st.data())
def test_term_decisions_search_exactly_what_select_terms_selects(index, data):
    terms, frequency, documents = index
    recurring = set(data.draw(st.lists(st.sampled_from(terms)) if terms else st.just([])))
    decisions = policy.term_decisions(terms, frequency, documents, recurring)
    assert [term for term, _ in decisions] == terms
    searched = {term for term, decision in decisions if decision == policy.SEARCHED}
    assert searched == set(select_terms(terms, frequency, documents, recurring))


def test_term_decisions_name_each_rule():
    rare = [f"rare{n:02d}" for n in range(MAX_QUERY_TERMS + 1)]
    frequency = {"common": 200, **{term: 1 + n for n, term in enumerate(rare)}, "boiler": 1}
    terms = ["the", "boiler", "ghost", "common", *rare]
    decisions = dict(policy.term_decisions(terms, frequency, 1000, recurring={"boiler"}))
    assert decisions["the"] == policy.STOP_WORD
    assert decisions["boiler"] == policy.RECURRING
    assert decisions["ghost"] == policy.UNKNOWN
    assert decisions["common"] == policy.TOO_COMMON
    # The rarest MAX_QUERY_TERMS are searched; the one most common of them is not.
    assert [decisions[term] for term in rare] == [policy.SEARCHED] * MAX_QUERY_TERMS + [
        policy.OVER_TERM_LIMIT
    ]
