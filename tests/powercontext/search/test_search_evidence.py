"""An explicit search gathers only the evidence its verdicts read: coverage, subjects,
held words and spread are a pack's (``relevance.evidence.gather``), and a search's
verdicts are the same without them. Pure: no database."""

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from powercontext.search.relevance import evidence, rules
from powercontext.search.relevance.evidence import QueryFacts

VOCABULARY = "alpha beta gamma delta epsilon zeta eta theta".split()
terms = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6)
subsets = st.frozensets(st.sampled_from(VOCABULARY), max_size=4)

facts = st.builds(
    QueryFacts,
    names=st.frozensets(subsets.filter(bool), max_size=3),
    picking=subsets,
    common=subsets,
    unknown=subsets,
    anchors_only=st.booleans(),
    single_segment=st.booleans(),
    readable=st.booleans(),
    subjects=subsets,
    pack=st.just(False),
)
candidates = st.lists(
    st.tuples(
        terms.map(" ".join),
        st.booleans(),
        st.none() | st.floats(min_value=-0.2, max_value=1.0, allow_nan=False),
    ),
    max_size=12,
).map(lambda found: [(f"c{at}", *candidate) for at, candidate in enumerate(found)])


@given(
    asked=facts,
    found=candidates,
    weights=st.dictionaries(st.sampled_from(VOCABULARY), st.floats(0.01, 5.0), min_size=1),
    segments=st.lists(terms, min_size=1, max_size=4),
)
def test_a_search_judges_the_same_without_a_packs_evidence(asked, found, weights, segments):
    kept = evidence.gather(found, facts=asked, weights=weights, segments=segments)
    whole = evidence.gather(
        found, facts=replace(asked, pack=True), weights=weights, segments=segments
    )
    assert rules.judge(kept, asked) == rules.judge(whole, asked)
