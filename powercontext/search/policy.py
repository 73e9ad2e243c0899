"""Which query terms a full-text search uses, and how much each counts. Shared by every
backend. Pure.

The hook sends the whole prompt as the query, so a query is often a few words that
matter inside hundreds of words of instructions. Matching on every term would let the
common ones ("the", "please", "tests") decide the ranking and make the search read most
of the index. Instead terms are weighed by how rare they are in the index (``term_weight``,
BM25's inverse document frequency), and the engine is asked only for the candidates of the
rarest few (``select_terms``); the candidates are then scored by every weighted term of the
query (``powercontext.search.ranking``), so the ranking is the same on every engine.

Graded, never deleted: a term in a large share of the scope's entries (a project's main
topic: "invoice" in a billing service) or in many of the user's recent prompts counts for
less, but it is never what makes a search come back empty. It is left out of the first
candidate query only, for speed; when the rarer terms find nothing, the candidates of the
weak terms are searched (``plan_search``).

A scope's own counts cannot see everything that is common, though: a scope of a few
hundred entries may hold "before", "which" or "anything" only once or twice, and a prompt's
instructions are full of such words. Counted as rare, each would pull in an unrelated entry
with a high weight. English function words are therefore treated as common whatever the
counts say (``STOP_WORDS``): a prior from the language, which any large index would
confirm, and never searched. Content words are left to the counts; the prior is
deliberately no larger than the words that carry no topic of their own.

Nor can the index's counts see a user's own boilerplate: "run the full test suite", "don't
push", "check the diff" are as rare in a scope's memories as the words of the question they
wrap, and a user sends the same instructions prompt after prompt. The hook captures every
prompt into the scope's source journal, so the prompts themselves say which words recur:
a term in a good share of the scope's recent prompts says little about what this prompt
asks (``recurring_terms``), and a Context Pack weighs it down (``RECURRING_TERM_WEIGHT``).
A one-off prompt, or a new scope, has no such history and is searched as it is.
"""

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from powercontext.search.analyzer import stem

# A term in more than this share of documents is left out of the first candidate query
# (it still weighs in the score, and is searched when the rarer terms find nothing).
# Measured on locomo-dev when such terms were dropped: 0.08 pruned terms that still tell
# entries apart (bare questions 64.0 % any evidence); 0.15 keeps them (65.7 %).
COMMON_TERM_SHARE = 0.15
# Below this many documents, shares are too noisy to call any term common.
MIN_DOCUMENTS_FOR_PRUNING = 50
# Asking the engine for more terms than this costs time and adds only weak evidence.
MAX_QUERY_TERMS = 24
# How many of the engine's best candidates are scored by every weighted term. Enough that
# the scoring, not the engine's cut, decides the window of 16 the builder sees.
CANDIDATE_POOL = 50

# How many of a scope's most recent captured prompts are looked back on, how many it takes
# before any term is called recurring, and the share of them a recurring term is in.
# Measured on locomo-dev (prompts captured as the hook does): 20 / 5 / 0.3 lifts questions
# inside templates from 34-50 % to 63-64 % any evidence, bare questions unchanged. A share
# of 0.5 does as well until the user's templated prompts alternate with two short replies
# each ("yes, go ahead", "continue"), where it falls back to 34-50 %; 0.3 holds there. A
# window of 50 adapts too slowly when the user's template changes (59-62 %).
PROMPT_HISTORY = 20
MIN_PROMPTS_FOR_RECURRING = 5
RECURRING_PROMPT_SHARE = 0.3
# What a recurring term's weight is multiplied by in a Context Pack's scoring.
RECURRING_TERM_WEIGHT = 0.1

# English function words (pronouns, determiners, prepositions, conjunctions, auxiliaries
# and their contraction stems, as the analyzer splits "don't" into "don" and "t"), plus
# the few adverbs that only connect instructions ("already", "again", "first", "then").
# A topic never rests on one of them.
STOP_WORDS = frozenset(
    """
    a about above across after afterwards again against all almost alone along already also
    although always am among amongst an and another any anybody anyhow anyone anything anyway
    anywhere are aren around as at be became because become becomes been before beforehand
    behind being below beside besides between beyond both but by can cannot could couldn d
    did didn do does doesn doing don done down during each either else elsewhere enough etc
    even ever every everybody everyone everything everywhere except few first for former
    formerly from further had hadn has hasn have haven having he hence her here hereafter
    hereby herein hers herself him himself his how however i if in indeed instead into is isn
    it its itself just ll least less m many may me meanwhile might mine more moreover most
    mostly much must my myself namely neither never nevertheless next no nobody none noone nor
    not nothing now nowhere o of off often on once one only onto or other others otherwise our
    ours ourselves out over own per perhaps please quite rather re s same several shall she
    should shouldn since so some somebody somehow someone something sometime sometimes
    somewhere still such t than that the their theirs them themselves then thence there
    thereafter thereby therefore therein thereupon these they this those though through
    throughout thru thus to together too toward towards under unless until up upon us ve very
    via was wasn we well were weren what whatever when whence whenever where whereafter whereas
    whereby wherein whereupon wherever whether which while whither who whoever whole whom whose
    why will with within without won would wouldn y yet you your yours yourself yourselves
    """.split()
)


# The same prior for Chinese, Japanese and Korean, whose text the analyzer indexes as single
# characters and the bigrams they start: a lone kana (the particles の, を, に, the endings
# of inflected words, a katakana word's single sounds), a Hangul particle or ending (에, 은,
# 를), or a Chinese function character (的, 了, 是) says nothing of a subject on its own, and
# matched every entry written in its language (issue 37). The bigrams they start still
# count ("支付" holds no function character; "の設定" is still a bigram of "の").
_HIRAGANA = [chr(code) for code in range(0x3041, 0x3097)]
CJK_STOP_TERMS = frozenset(
    _HIRAGANA
    # Two hiragana: inflections and grammar (する, です, から, どこ); a Japanese subject
    # is written in kanji or katakana, whose bigrams stay.
    + [first + second for first in _HIRAGANA for second in _HIRAGANA]
    + [chr(code) for code in range(0x30A1, 0x30FB)]  # katakana
    + ["ー", "ゝ", "ゞ", "ヽ", "ヾ", "々"]
    + list("은는이가을를에의도와과로만께게요다고며면서데나랑하한할해된되지")
    + list(
        "的了是在和与及或吗呢吧啊把被也都就这那个么之其而并我你他她它们有要会能可以为对从到给让还又很该请"
    )
)

# The analyzer stems English words ("does" becomes "doe"): the list holds both forms.
STOP_TERMS = STOP_WORDS | frozenset(stem(word) for word in STOP_WORDS) | CJK_STOP_TERMS


def recurring_terms(terms: Collection[str], prompts: Sequence[Collection[str]]) -> frozenset[str]:
    """Which of ``terms`` recur in the user's recent ``prompts`` (each a set of analyzer
    terms, the current prompt not among them): none below ``MIN_PROMPTS_FOR_RECURRING``
    prompts, else those in at least ``RECURRING_PROMPT_SHARE`` of them."""
    if len(prompts) < MIN_PROMPTS_FOR_RECURRING:
        return frozenset()
    needed = RECURRING_PROMPT_SHARE * len(prompts)
    return frozenset(term for term in terms if sum(term in prompt for prompt in prompts) >= needed)


def countable_terms(terms: list[str]) -> list[str]:
    """The terms a search could weigh, whatever their counts: the only ones worth counting
    in the index (a whole prompt is mostly function words, and each counted term is one
    more index lookup)."""
    return [term for term in terms if term not in STOP_TERMS]


def term_weight(document_frequency: int, documents: int) -> float:
    """How much a term in ``document_frequency`` of ``documents`` tells entries apart:
    BM25's inverse document frequency, positive however common the term is."""
    documents = max(documents, document_frequency)
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


def _is_common(document_frequency: int, documents: int) -> bool:
    return (
        documents >= MIN_DOCUMENTS_FOR_PRUNING
        and document_frequency > COMMON_TERM_SHARE * documents
    )


def select_terms(
    terms: list[str],
    document_frequency: Mapping[str, int],
    documents: int,
    recurring: Collection[str] = frozenset(),
) -> list[str]:
    """The terms of the first candidate query, rarest first.

    ``terms`` are the query's distinct analyzer tokens; ``document_frequency`` maps a term
    to the number of indexed documents containing it (absent or 0: unknown to the index);
    ``documents`` is the number of indexed documents. Terms in ``STOP_WORDS`` are never
    searched, nor terms unknown to the index (they cannot match). Terms in ``recurring``
    (see ``recurring_terms``) and, once the index is large enough to tell, terms in more
    than ``COMMON_TERM_SHARE`` of its documents are weak: left out here, still weighed
    (``plan_search``).
    """
    known = [
        term
        for term in terms
        if document_frequency.get(term, 0) > 0 and term not in STOP_TERMS and term not in recurring
    ]
    known = [term for term in known if not _is_common(document_frequency[term], documents)]
    # Stable sort: among equally rare terms the query's own order decides.
    known.sort(key=lambda term: document_frequency[term])
    return known[:MAX_QUERY_TERMS]


@dataclass(frozen=True)
class SearchPlan:
    """How one query is searched: the engine is asked for the candidates of ``match``
    (the rare terms), or of ``fallback`` (the weak ones: common, and recurring where the
    prompt asks with them) when ``match`` is empty or finds nothing; every candidate is
    then scored by ``weights``, which holds every searchable term of the query.
    ``document_frequency`` holds the weighted terms' counts, ``documents`` the index's."""

    match: tuple[str, ...]
    fallback: tuple[str, ...]
    weights: Mapping[str, float]
    document_frequency: Mapping[str, int] = field(default_factory=dict)
    documents: int = 0


def plan_search(
    terms: list[str],
    document_frequency: Mapping[str, int],
    documents: int,
    recurring: Collection[str] = frozenset(),
    segments: Sequence[Collection[str]] | None = None,
) -> SearchPlan:
    """The plan for ``terms`` (see ``select_terms`` for the arguments; ``segments``: the
    terms of each of the prompt's segments, ``powercontext.search.ranking``). A recurring
    term's weight is multiplied by ``RECURRING_TERM_WEIGHT``."""
    match = select_terms(terms, document_frequency, documents, recurring)
    chosen = set(match)
    weak = [
        term
        for term in terms
        if term not in chosen and term not in STOP_TERMS and document_frequency.get(term, 0) > 0
    ]
    weak.sort(key=lambda term: document_frequency[term])
    weak = weak[:MAX_QUERY_TERMS]
    weights = {}
    for term in (*match, *weak):
        weight = term_weight(document_frequency[term], documents)
        if term in recurring:
            weight *= RECURRING_TERM_WEIGHT
        weights[term] = weight
    # The user's recurring words find candidates of their own when they are all the query
    # says ("billing?" from someone who keeps asking about billing), or when they share a
    # segment with words that are not recurring ("Is there a one-way sync mode?": the
    # question itself). A segment made only of recurring words is the user's instructions:
    # entries sharing only those are noise, and a prompt whose question finds nothing gets
    # nothing.
    if recurring and segments is not None:
        content = [term for term in terms if term not in STOP_TERMS]
        if not all(term in recurring for term in content):
            asked = {
                term
                for segment in segments
                if any(t not in recurring and t not in STOP_TERMS for t in segment)
                for term in segment
            }
            weak = [term for term in weak if term not in recurring or term in asked]
    counts = {term: document_frequency[term] for term in weights}
    return SearchPlan(tuple(match), tuple(weak), weights, counts, documents)


# What happens to a query term (``term_decisions``), in the order plan_search applies the
# rules. Common and recurring terms are weighed, never dropped.
SEARCHED = "searched"  # in the first candidate query, at its rarity weight
STOP_WORD = "stop_word"  # an English function word: not searched
RECURRING = "recurring"  # in a good share of the scope's recent prompts: weighted down
UNKNOWN = "unknown"  # in no indexed document: cannot match
TOO_COMMON = "too_common"  # in more than COMMON_TERM_SHARE of the documents: weighted down
OVER_TERM_LIMIT = "over_term_limit"  # rarer terms already filled MAX_QUERY_TERMS


def term_decisions(
    terms: list[str],
    document_frequency: Mapping[str, int],
    documents: int,
    recurring: Collection[str] = frozenset(),
    segments: Sequence[Collection[str]] | None = None,
) -> list[tuple[str, str]]:
    """``(term, decision)`` for each of ``terms``, in query order: what ``plan_search``
    does with each, for explaining a pack to a person. ``SEARCHED`` terms are exactly the
    plan's first candidate query; ``RECURRING`` and ``TOO_COMMON`` terms still weigh in
    the score (a test holds the two together)."""
    plan = plan_search(terms, document_frequency, documents, recurring, segments)
    searched = set(plan.match)
    decisions = []
    for term in terms:
        if term in searched:
            decision = SEARCHED
        elif term in STOP_TERMS:
            decision = STOP_WORD
        elif document_frequency.get(term, 0) <= 0:
            decision = UNKNOWN
        elif term in recurring and term in plan.weights:
            decision = RECURRING
        elif _is_common(document_frequency[term], documents) and term in plan.weights:
            decision = TOO_COMMON
        else:
            decision = OVER_TERM_LIMIT
        decisions.append((term, decision))
    return decisions
