"""Which query terms a full-text search uses, shared by every backend. Pure.

The hook sends the whole prompt as the query, so a query is often a few words that
matter inside hundreds of words of instructions. Matching on every term would let the
common ones ("the", "please", "tests") decide the ranking and make the search read most
of the index. Instead terms are weighed by how rare they are in the index: terms that
occur in a large share of documents are dropped (they cannot tell documents apart), and
only the rarest few are searched; the engine's own ranking (bm25 / natural-language
relevance) then weights what remains by rarity again.

A scope's own counts cannot see everything that is common, though: a scope of a few
hundred entries may hold "before", "which" or "anything" only once or twice, and a prompt's
instructions are full of such words. Counted as rare, each would pull in an unrelated entry
with a high bm25 weight. English function words are therefore treated as common whatever
the counts say (``STOP_WORDS``): a prior from the language, which any large index would
confirm. Content words are left to the counts; the prior is deliberately no larger than
the words that carry no topic of their own.

Nor can the index's counts see a user's own boilerplate: "run the full test suite", "don't
push", "check the diff" are as rare in a scope's memories as the words of the question they
wrap, and a user sends the same instructions prompt after prompt. The hook captures every
prompt into the scope's source journal, so the prompts themselves say which words recur:
a term in a good share of the scope's recent prompts says nothing about what this prompt
asks (``recurring_terms``), and a Context Pack does not search it. A one-off prompt, or a
new scope, has no such history and is searched as it is.
"""

from collections.abc import Collection, Mapping, Sequence

from powercontext.analyzer import stem

# A term in more than this share of documents is treated as a stop word. Measured on
# locomo-dev: 0.08 pruned terms that still tell entries apart (bare questions 64.0 % any
# evidence); 0.15 keeps them (65.7 %), with templates unchanged; 0.3 adds nothing more.
COMMON_TERM_SHARE = 0.15
# Below this many documents, shares are too noisy to call any term common.
MIN_DOCUMENTS_FOR_PRUNING = 50
# Searching more terms than this costs time and adds only weak evidence.
MAX_QUERY_TERMS = 24

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


# The analyzer stems English words ("does" becomes "doe"): the list holds both forms.
STOP_TERMS = STOP_WORDS | frozenset(stem(word) for word in STOP_WORDS)


def recurring_terms(terms: Collection[str], prompts: Sequence[Collection[str]]) -> frozenset[str]:
    """Which of ``terms`` recur in the user's recent ``prompts`` (each a set of analyzer
    terms, the current prompt not among them): none below ``MIN_PROMPTS_FOR_RECURRING``
    prompts, else those in at least ``RECURRING_PROMPT_SHARE`` of them."""
    if len(prompts) < MIN_PROMPTS_FOR_RECURRING:
        return frozenset()
    needed = RECURRING_PROMPT_SHARE * len(prompts)
    return frozenset(term for term in terms if sum(term in prompt for prompt in prompts) >= needed)


def countable_terms(terms: list[str], recurring: Collection[str] = frozenset()) -> list[str]:
    """The terms ``select_terms`` could keep, whatever their counts: the only ones worth
    counting in the index (a whole prompt is mostly function words and the user's recurring
    instructions, and each counted term is one more index lookup)."""
    return [term for term in terms if term not in STOP_TERMS and term not in recurring]


def select_terms(
    terms: list[str],
    document_frequency: Mapping[str, int],
    documents: int,
    recurring: Collection[str] = frozenset(),
) -> list[str]:
    """The terms worth searching, rarest first.

    ``terms`` are the query's distinct analyzer tokens; ``document_frequency`` maps a term
    to the number of indexed documents containing it (absent or 0: unknown to the index);
    ``documents`` is the number of indexed documents. Terms in ``STOP_WORDS`` or in
    ``recurring`` (see ``recurring_terms``) are never searched; the rest are dropped when
    unknown to the index or, once the index is large enough to tell, when they occur in
    more than ``COMMON_TERM_SHARE`` of its documents.
    """
    known = [
        term
        for term in terms
        if document_frequency.get(term, 0) > 0 and term not in STOP_TERMS and term not in recurring
    ]
    if documents >= MIN_DOCUMENTS_FOR_PRUNING:
        limit = COMMON_TERM_SHARE * documents
        known = [term for term in known if document_frequency[term] <= limit]
    # Stable sort: among equally rare terms the query's own order decides.
    known.sort(key=lambda term: document_frequency[term])
    return known[:MAX_QUERY_TERMS]


# Why a query term is or is not searched (``term_decisions``), in the order select_terms
# applies the rules.
SEARCHED = "searched"
STOP_WORD = "stop_word"  # an English function word
RECURRING = "recurring"  # in a good share of the scope's recent prompts
UNKNOWN = "unknown"  # in no indexed document
TOO_COMMON = "too_common"  # in more than COMMON_TERM_SHARE of the documents
OVER_TERM_LIMIT = "over_term_limit"  # rarer terms already filled MAX_QUERY_TERMS


def term_decisions(
    terms: list[str],
    document_frequency: Mapping[str, int],
    documents: int,
    recurring: Collection[str] = frozenset(),
) -> list[tuple[str, str]]:
    """``(term, decision)`` for each of ``terms``, in query order: the reason
    ``select_terms`` searches or leaves out each, for explaining a pack to a person. The
    searched ones are exactly ``select_terms``' (a test holds the two together)."""
    searched = set(select_terms(terms, document_frequency, documents, recurring))
    limit = COMMON_TERM_SHARE * documents if documents >= MIN_DOCUMENTS_FOR_PRUNING else None
    decisions = []
    for term in terms:
        if term in searched:
            decision = SEARCHED
        elif term in STOP_TERMS:
            decision = STOP_WORD
        elif term in recurring:
            decision = RECURRING
        elif document_frequency.get(term, 0) <= 0:
            decision = UNKNOWN
        elif limit is not None and document_frequency[term] > limit:
            decision = TOO_COMMON
        else:
            decision = OVER_TERM_LIMIT
        decisions.append((term, decision))
    return decisions
