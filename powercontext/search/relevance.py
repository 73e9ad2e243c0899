"""The relevance decision: which candidates a search's evidence supports. Pure.

Both channels always propose: the engine returns the rows holding some of the query's
words, the vector index the rows nearest to it, and a scope's nearest rows are "nearest"
even to a question it cannot answer. A fixed cosine floor does not mean the same thing for
a short identifier, a paragraph of boilerplate and a one-word chat turn, so every
candidate is admitted on the evidence for it, and a Context Pack holds nothing when no
candidate has strong evidence (docs/relevance.md, "The relevance decision"):

- **Anchors.** A prompt's names and identifiers (``zq20c249a9551941``, ``make_release``,
  ``GraphQL``, a person's name in mid-sentence) say exactly what it is about, and the
  embedding model cannot read them (to it one hex string looks like another). When an
  anchor matches some entries, an entry without it needs a strong similarity of its own;
  when the query is nothing but anchors, it is not a hit at all. When no anchor of the
  query matches anything (a name the scope never saw), the entries near it by meaning are
  not evidence either, unless strongly similar.
  A name most of the scope's entries hold (a speaker in their own chat, the language a
  project is written in) picks none of them out (``picks_out``): the entries holding it
  are still admitted as anchored, but holding it is not evidence that something answers.
- **A list of the prompt's words is not an answer** (packs only). A candidate holding many
  of a long prompt's words, spread over its sentences, is a note stuffed with common words
  or agent boilerplate: an answer speaks to one question of the prompt, with its few words.
- **What the model cannot read, it does not judge.** A query or an entry written mostly
  in a script the model has no vocabulary for (CJK for an English model) gets no hit from
  the semantic channel alone; its words still find it, and in a pack they alone decide
  (``UNREADABLE_COVERAGE``): the model's cosine between two such texts is no evidence.
- **Meaning alone must come near the best.** A candidate only the semantic channel
  proposes must reach ``SEMANTIC_FLOOR`` and come within ``SEMANTIC_SPREAD`` of the best
  candidate's similarity.
- **Words alone must be more than a shared word** (packs only). A candidate only its words
  found is admitted when they cover a good share of the segment it matches, with some
  meaning behind them, or when it is near in meaning anyway.
- **Something must answer** (packs only). A pack is empty unless some admitted candidate
  has strong evidence: an anchor it holds, a strong similarity, or most of a segment's
  words with meaning behind them.
- **An answer speaks to what the prompt asks** (packs only). A candidate holding no anchor
  of the prompt whose focus (``powercontext.search.focus``: how much of a prompt segment
  it speaks to, token by token) is far under the best candidate's is on the prompt's
  subject without answering it: the next candidates take its place (:func:`off_focus`),
  unless it is the semantic channel's nearest (``FOCUS_NEAREST_KEPT``).
- **Near-duplicates take one slot** (packs only). An admitted candidate whose stored
  vector is as near as ``DUPLICATE_SIMILARITY`` to a better-ranked admitted one's, and
  whose text holds the same numbers and identifiers, says what that one says in other
  words: the better-ranked one stands for both (:func:`duplicates`).

An explicit search keeps every candidate its words found (no matching entry vanishes
from a search); only candidates proposed by meaning alone are judged there.
"""

import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from powercontext.search import analyzer
from powercontext.search.policy import STOP_TERMS

# A candidate proposed by meaning alone needs this cosine, and to be within
# SEMANTIC_SPREAD of the best candidate's.
SEMANTIC_FLOOR = 0.3
SEMANTIC_SPREAD = 0.1
# Without an anchor of the query, or when the query's anchors match nothing: the
# similarity that still counts as evidence.
STRONG_SIMILARITY = 0.4
# Packs: a candidate only its words found is admitted when they cover WORD_COVERAGE of the
# best segment it matches and it comes within WORDS_WITH_MEANING in meaning, or when it is
# as near as MEANING_ALONE whatever its words.
WORD_COVERAGE = 0.45
WORDS_WITH_MEANING = 0.12
MEANING_ALONE = 0.35
# Packs: a candidate only its words found, in a script the model cannot read (the query's
# or its own), is admitted when they cover this share of the segment it matches best: the
# model's cosine is no evidence there.
UNREADABLE_COVERAGE = 0.45
# Packs: a candidate holding a subject of the query no better candidate holds, with this
# much meaning behind it.
SUBJECT_SIMILARITY = 0.25
# Packs: the evidence that something in the scope answers the prompt.
ANSWERED_SIMILARITY = 0.3
ANSWERED_COVERAGE = 0.6
ANSWERED_COVERAGE_SIMILARITY = 0.3
# An anchor held by more than COMMON_ANCHOR_SHARE of a scope's documents, and by more than
# COMMON_ANCHOR_DOCUMENTS of them, picks none out (``picks_out``).
COMMON_ANCHOR_SHARE = 0.02
COMMON_ANCHOR_DOCUMENTS = 2
# Packs: a candidate holding WORD_LIST_HELD or more of the query's weighted words, in at
# least WORD_LIST_SPREAD of its segments (of three or more), is a list of the prompt's
# words (a note stuffed with common words, agent boilerplate), not an answer to one of
# its questions. Answers found by the dev data's long prompts held at most 12.
WORD_LIST_HELD = 13
WORD_LIST_SPREAD = 0.3
WORD_LIST_SEGMENTS = 3
# A text whose letters are at least this share in scripts the model reads is readable.
READABLE_SHARE = 0.5
# Packs: two admitted candidates whose stored vectors are this near, and whose texts hold
# the same numbers, say the same thing (``duplicates``; docs/relevance.md, the relevance
# decision; bench/duplicate_threshold.py): paraphrases scored 0.62-0.91, distinct
# coding-memory entries at most 0.83, a LoCoMo question and its answer's echo 0.92.
DUPLICATE_SIMILARITY = 0.9
# Packs: an admitted candidate holding no anchor of the query whose focus (``focus``: how
# much of a prompt segment it speaks to, token by token) is more than FOCUS_SPREAD under
# the best of the first FOCUS_WINDOW admitted candidates' on the same segment speaks to
# the prompt's subject, not to what it asks (``off_focus``). bench/focus_gate.py, dev sets,
# with the word exemption below: coding recall_any holds at 91.2 % from 0.1 to 0.15 while
# precision falls from 53.6 to 50.6 % (without the exemption, 0.08 starts to cost recall);
# LoCoMo bare stays at 71.8 / 58.4-58.5 %. 0.12 keeps off the edge.
FOCUS_SPREAD = 0.12
FOCUS_WINDOW = 16
# ... unless it says a word of the segment (a token matched at FOCUS_WORD or more) that no
# better-ranked candidate says (FOCUS_WORD_MARGIN above each): one subject of a question
# about several. bench/focus_gate.py: a flat region for 0.65-0.75 and 0.25-0.35.
FOCUS_WORD = 0.75
FOCUS_WORD_MARGIN = 0.3
# ... nor one of the semantic channel's FOCUS_NEAREST_KEPT nearest candidates: being
# nearest the prompt in meaning is not evidence of speaking to something else ("How do I
# regenerate atlantis.yaml?" lost its answer, the nearest at 0.72, to the scaffold command
# that also regenerates it). Chosen leave-one-project-out on all seven dev projects (1
# against 0): held-out means recall_any 89.7 -> 90.2 %, precision 48.2 -> 47.9 %
# (bench/relevance_fit.py --choose FOCUS_NEAREST_KEPT=0,1).
FOCUS_NEAREST_KEPT = 1
# A pack's window is ordered with each candidate's focus lift (``Focused``): its focus on a
# segment less FOCUS_CROWD times the window's median focus on that segment. The whole
# median (1.0) counts only how far a candidate stands out, not how much it says: LoCoMo
# wrapped questions 66.0-66.5 % in process; 0.5-0.8 gives 67.6-68.4 % (coding recall_any
# 91.2 against 91.8 %: one boilerplate prompt's answer, focus 0.36, leaves the pack); under
# 0.45, copies of a note repeating a long prompt's instruction push out the answer to its
# question (tests/contextpack/test_relevance_long_prompt.py).
FOCUS_CROWD = 0.75


class Verdict(StrEnum):
    """Why a candidate was admitted or left out (shown on the desk's pack preview)."""

    ANCHORED = "holds an anchor of the query"
    WORDS = "its words cover the segment it matches"
    MEANING = "near in meaning"
    WORDS_KEPT = "holds the query's words (a search keeps them all)"
    SUBJECT = "its words name a subject of the query no better candidate holds"
    NOT_ANCHORED = "lacks the anchor the query names"
    UNKNOWN_ANCHOR = "the query's names match nothing, and it is not near enough"
    UNREADABLE = "meaning alone, in a script the model cannot read"
    FAR = "meaning alone, not near enough"
    FAR_FROM_BEST = "meaning alone, far under the best candidate"
    WEAK_WORDS = "shares a word or two and little meaning"
    WORD_LIST = "holds the prompt's words all over it: a list of its words, not an answer"
    NOTHING_ANSWERS = "no candidate has strong evidence: the pack stays empty"
    DUPLICATE = "says what a better-ranked candidate says"
    OFF_FOCUS = "speaks to far less of the prompt, token by token, than the best candidate"


ADMITTED = frozenset(
    {Verdict.ANCHORED, Verdict.WORDS, Verdict.MEANING, Verdict.WORDS_KEPT, Verdict.SUBJECT}
)


@dataclass(frozen=True)
class Evidence:
    """What is known about one candidate: ``similarity`` is its cosine to the query (to the
    nearest of a prompt's segments; None when the semantic channel has nothing on it),
    ``coverage`` the weighted share of the best-matching segment's words it holds (0 when
    its words did not find it), ``terms`` its analyzed text's terms."""

    key: str
    lexical: bool
    similarity: float | None
    coverage: float
    terms: frozenset[str]
    readable: bool
    # The query's stronger words it holds (weighed at least as much as the query's
    # weighted words on average): the subjects it speaks to.
    subjects: frozenset[str] = frozenset()
    # How many of the query's weighted words it holds.
    held: int = 0
    # The share of the query's segments it holds a weighted word of (``spread``).
    spread: float = 0.0
    # The query's anchor terms it holds as whole names (``held``); None: each of its
    # ``terms`` counts.
    anchors_held: frozenset[str] | None = None

    @property
    def anchor_terms_held(self) -> frozenset[str]:
        """The terms that say which of the query's anchors it holds."""
        return self.terms if self.anchors_held is None else self.anchors_held


# Words that name something: identifiers with digits or underscores, inner capitals
# (GraphQL, NamedTuple), or a capital inside a sentence. Not all capitals alone (API, CI,
# AGENTS.md): acronyms and boilerplate file names, not subjects; and not the first word of
# a sentence, a line or a list item ("- Add a test").
# CJK characters end a word: Chinese and Japanese write identifiers against their own
# text without a space ("调大HikariPool的连接池").
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[^\W_{_CJK}](?:[^\W{_CJK}]|[.-](?=[^\W{_CJK}]))*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?:;]\s|[.!?:;]$")


def anchor_names(text: str) -> frozenset[frozenset[str]]:
    """``text``'s names and identifiers (see the module's docstring), each as the analyzer
    terms an entry must hold together to hold it: ``release-3.14.2-rc1`` is one name of
    five terms, and an entry saying "net 14" does not hold it."""
    found: set[frozenset[str]] = set()
    for line in text.splitlines():
        at_start, end = True, 0
        for match in _WORD.finditer(line):
            if end and _SENTENCE_END.search(line[end - 1 : match.start()]):
                at_start = True
            word = match.group(0)
            # A dotted or dashed identifier with digits (HAR-1101, v3.2) names one thing.
            parts = [word] if _is_identifier(word) else re.split(r"[.-]", word)
            for part in parts:
                if _is_anchor(part, at_start):
                    name = frozenset(t for t in analyzer.tokens(part) if t not in STOP_TERMS)
                    if any(len(term) > 1 for term in name):
                        found.add(name)
            at_start, end = False, match.end()
    return frozenset(found)


def anchor_terms(names: Collection[frozenset[str]]) -> frozenset[str]:
    """The anchor terms of ``names`` (``anchor_names``): their terms of two characters or
    more (a lone digit of a version names nothing)."""
    return frozenset(term for name in names for term in name if len(term) > 1)


def held(names: Collection[frozenset[str]], terms: frozenset[str]) -> frozenset[str]:
    """The terms of the ``names`` that ``terms`` (an entry's) hold whole."""
    return frozenset(term for name in names if name <= terms for term in name)


def _is_identifier(word: str) -> bool:
    return word.isascii() and _has_letter(word) and _ASCII_DIGIT.search(word) is not None


# Checked in C for each word of a prompt: in ASCII, a letter is a character with two cases.
_ASCII_DIGIT = re.compile(r"[0-9]")


def _has_letter(ascii_word: str) -> bool:
    return ascii_word.lower() != ascii_word.upper()


# Capitalised by convention, not names: "on Friday evening" names no subject of a scope.
CALENDAR_WORDS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march
    april may june july august september october november december""".split()
)


def _is_anchor(word: str, sentence_start: bool) -> bool:
    if len(word) < 2 or not word.isascii() or not _has_letter(word):
        return False
    if word.lower() in CALENDAR_WORDS:
        return False
    if _is_identifier(word) or "_" in word:
        return True
    if word.isupper():
        return False
    if word[1:] != word[1:].lower():
        return True  # GraphQL, NamedTuple: an upper-case letter after the first
    return word[0].isupper() and not sentence_start


def picks_out(term: str, document_frequency: int, documents: int) -> bool:
    """Whether the anchor ``term``, held by ``document_frequency`` of a scope's
    ``documents``, singles entries out. An identifier always does (a ticket number, a
    function's name); a name does while few entries hold it: "Python" in a Python
    project's notes, or a speaker's name in their own chat, does not show that one of
    them answers."""
    if any(char.isdigit() or char == "_" for char in term):
        return True
    return document_frequency <= max(COMMON_ANCHOR_DOCUMENTS, COMMON_ANCHOR_SHARE * documents)


def readable(text: str) -> bool:
    """Whether the embedding model can read ``text``: most of its letters are Latin (the
    model's vocabulary is English). Text without letters is readable (numbers, symbols)."""
    if text.isascii():
        return True  # Every letter Latin, and checked in C: most entries (once per candidate).
    letters = [char for char in text if char.isalpha()]
    if not letters:
        return True
    latin = sum(1 for char in letters if char.isascii() or _is_latin(char))
    return latin >= READABLE_SHARE * len(letters)


def _is_latin(char: str) -> bool:
    return unicodedata.name(char, "").startswith("LATIN")


def coverage(
    terms: Collection[str],
    weights: Mapping[str, float],
    segments: Sequence[Collection[str]],
) -> float:
    """The weighted share of the best segment's searchable words that ``terms`` holds."""
    return coverage_of(terms, weighted(weights, segments))


def weighted(
    weights: Mapping[str, float], segments: Sequence[Collection[str]]
) -> list[tuple[list[tuple[str, float]], float]]:
    """Each segment's searchable words with their weights, and their total: the part of
    :func:`coverage` that does not depend on the candidate, done once per query."""
    found = []
    for segment in segments:
        pairs = [
            (term, weight) for term in set(segment) if (weight := weights.get(term)) is not None
        ]
        total = 0.0
        for _, weight in pairs:
            total += weight  # in the order coverage always summed: the same float
        found.append((pairs, total))
    return found


def coverage_of(
    terms: Collection[str], segments: Sequence[tuple[list[tuple[str, float]], float]]
) -> float:
    """:func:`coverage` over the segments :func:`weighted` prepared."""
    best = 0.0
    for pairs, total in segments:
        if total > 0:
            held = 0.0
            for term, weight in pairs:
                if term in terms:
                    held += weight
            best = max(best, held / total)
    return best


def spread(
    terms: Collection[str],
    weights: Mapping[str, float],
    segments: Sequence[Collection[str]],
) -> float:
    """The share of the segments with a searchable word that hold one of ``terms``; 0
    when fewer than WORD_LIST_SEGMENTS segments have a searchable word."""
    searchable = [segment for segment in segments if any(term in weights for term in segment)]
    if len(searchable) < WORD_LIST_SEGMENTS:
        return 0.0
    touched = sum(
        1 for segment in searchable if any(term in weights and term in terms for term in segment)
    )
    return touched / len(searchable)


@dataclass(frozen=True)
class Judgement:
    key: str
    verdict: Verdict

    @property
    def admitted(self) -> bool:
        return self.verdict in ADMITTED


def judge(
    candidates: Sequence[Evidence],
    *,
    anchors_known: Collection[str],
    anchors_unknown: Collection[str],
    anchors_only: bool,
    single_segment: bool,
    readable_query: bool,
    pack: bool,
    anchors_common: Collection[str] = frozenset(),
) -> list[Judgement]:
    """A verdict for each of ``candidates`` (in their order). ``anchors_known`` are the
    query's anchors some document of the index holds, ``anchors_unknown`` those none does;
    ``anchors_common`` those most of the index's documents hold (admitted as anchors, not
    evidence that something answers: ``picks_out``);
    ``anchors_only``: the query says nothing but anchors; ``single_segment``: it is one
    sentence (in a long prompt an anchor names one of its subjects, not the only one).
    ``pack``: a Context Pack's
    decision (words alone judged too, and empty unless something answers); otherwise an
    explicit search's (every candidate its words found is kept)."""
    similarities = [c.similarity for c in candidates if c.similarity is not None]
    best = max(similarities, default=None)
    picking = set(anchors_known)
    known = picking | set(anchors_common)
    anchored = [c for c in candidates if c.anchor_terms_held & known]
    verdicts = [
        _verdict(
            candidate,
            best=best,
            anchored=bool(anchored),
            anchors_known=known,
            unknown_only=bool(anchors_unknown) and not anchored,
            anchors_only=anchors_only,
            single_segment=single_segment,
            readable_query=readable_query,
            pack=pack,
        )
        for candidate in candidates
    ]
    # A question about several things ("Celery, logging and the webhook secret") is
    # answered by several entries, each holding a share of its words: one whose words
    # name a subject no better candidate admitted holds counts, with some meaning behind.
    covered: set[str] = set()
    for at, (candidate, verdict) in enumerate(zip(candidates, verdicts, strict=True)):
        if verdict in ADMITTED:
            covered |= candidate.subjects
        elif (
            verdict is Verdict.WEAK_WORDS
            and candidate.subjects - covered
            and (candidate.similarity or 0.0) >= SUBJECT_SIMILARITY
            and readable_query
            and candidate.readable
        ):
            verdicts[at] = Verdict.SUBJECT
            covered |= candidate.subjects
    judged = [Judgement(c.key, v) for c, v in zip(candidates, verdicts, strict=True)]
    if pack and not any(
        _answers(c, v, picking, readable_query) for c, v in zip(candidates, verdicts, strict=True)
    ):
        return [Judgement(j.key, Verdict.NOTHING_ANSWERS) if j.admitted else j for j in judged]
    return judged


def _verdict(
    candidate: Evidence,
    *,
    best: float | None,
    anchored: bool,
    anchors_known: Collection[str],
    unknown_only: bool,
    anchors_only: bool,
    single_segment: bool,
    readable_query: bool,
    pack: bool,
) -> Verdict:
    similarity = candidate.similarity
    if pack and candidate.held >= WORD_LIST_HELD and candidate.spread >= WORD_LIST_SPREAD:
        return Verdict.WORD_LIST
    if candidate.anchor_terms_held & set(anchors_known):
        return Verdict.ANCHORED
    if candidate.lexical and not pack:
        return Verdict.WORDS_KEPT
    strong = similarity is not None and similarity >= STRONG_SIMILARITY
    # In a one-sentence query that names something, a candidate its other words found is
    # evidence for another subject of the question; one found by meaning alone is only
    # the named thing's neighbour.
    neighbour = not candidate.lexical and single_segment and not strong
    if anchored and (anchors_only or neighbour):
        return Verdict.NOT_ANCHORED
    if unknown_only and (anchors_only or not strong):
        return Verdict.UNKNOWN_ANCHOR
    if candidate.lexical:
        if similarity is None:
            return Verdict.WORDS  # no semantic evidence either way: the words decide
        if pack and not (readable_query and candidate.readable):
            # To an English model any two Chinese texts look alike: its cosine is no
            # evidence either way, and the words decide.
            return (
                Verdict.WORDS if candidate.coverage >= UNREADABLE_COVERAGE else Verdict.WEAK_WORDS
            )
        if candidate.coverage >= WORD_COVERAGE and similarity >= WORDS_WITH_MEANING:
            return Verdict.WORDS
        if similarity >= MEANING_ALONE:
            return Verdict.MEANING
        return Verdict.WEAK_WORDS
    if not (readable_query and candidate.readable):
        return Verdict.UNREADABLE
    if similarity is None or similarity < SEMANTIC_FLOOR:
        return Verdict.FAR
    if best is not None and similarity < best - SEMANTIC_SPREAD:
        return Verdict.FAR_FROM_BEST
    return Verdict.MEANING


def _answers(
    candidate: Evidence, verdict: Verdict, picking: Collection[str], readable_query: bool
) -> bool:
    if verdict not in ADMITTED:
        return False
    if verdict is Verdict.ANCHORED and candidate.anchor_terms_held & set(picking):
        return True
    similarity = candidate.similarity
    if similarity is None:
        return candidate.lexical  # the channel had nothing to say: the words decide
    if not (readable_query and candidate.readable):
        return candidate.lexical and candidate.coverage >= UNREADABLE_COVERAGE
    # Every word of a segment of two or more, with some meaning behind them: the model may
    # not read the words ("lorem ipsum"), but they are all there.
    whole = candidate.coverage >= 1.0 - 1e-9 and candidate.held >= 2
    return (
        similarity >= ANSWERED_SIMILARITY
        or (candidate.coverage >= ANSWERED_COVERAGE and similarity >= ANSWERED_COVERAGE_SIMILARITY)
        or (whole and similarity >= WORDS_WITH_MEANING)
    )


def numbers(searchable_text: str) -> frozenset[str]:
    """The terms of an analyzed text that hold a digit: its numbers and identifiers."""
    return frozenset(term for term in searchable_text.split() if any(c.isdigit() for c in term))


def duplicates(
    keys: Sequence[str],
    vectors: Mapping[str, Any],
    numbered: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, str]:
    """{key: the better-ranked key it duplicates} among ``keys`` (admitted candidates,
    best first): a candidate whose vector (``vectors``: the stored ones) has a cosine of
    ``DUPLICATE_SIMILARITY`` or more to that of a better-ranked candidate kept, and whose
    text holds the same numbers and identifiers (``numbered``: ``numbers`` of each text),
    is a duplicate of the first such one. Texts with different numbers say different
    things, however near the model puts them (a 30 s timeout and a 60 s one; two chat
    turns of different dates). A candidate without a vector is never a duplicate, nor
    stands for one. Each verdict depends on the better-ranked candidates alone, so a
    longer ``keys`` never changes those of its prefix."""
    numbered = numbered or {}
    found: dict[str, str] = {}
    kept: list[str] = []
    units: list[np.ndarray] = []
    for key in keys:
        vector = vectors.get(key)
        if vector is None:
            continue
        values = np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(values))
        if not norm or not np.isfinite(norm) or (units and values.shape != units[0].shape):
            continue
        unit = values / norm
        said = numbered.get(key, frozenset())
        cosines = np.stack(units) @ unit if units else np.empty(0)
        near = [
            kept[at]
            for at in np.flatnonzero(cosines >= DUPLICATE_SIMILARITY)
            if numbered.get(kept[at], frozenset()) == said
        ]
        if near:
            found[key] = near[0]
            continue
        kept.append(key)
        units.append(unit)
    return found


@dataclass(frozen=True)
class Focused:
    """``focus``: each judged candidate's focus (on the segment it speaks to most);
    ``left_out``: the candidates :func:`off_focus` leaves out; ``lift``: each judged
    candidate's focus less FOCUS_CROWD times the window's median focus on the same
    segment, on the segment where that is highest (``fusion.with_focus`` orders a pack's
    window by it). Copies of a note that repeats one of a long prompt's instructions word
    for word lift little (the median of their segment is their own focus); the answer to
    the question the instructions wrap lifts on the question."""

    focus: dict[str, float]
    left_out: frozenset[str]
    lift: dict[str, float] = field(default_factory=dict)


def off_focus(
    admitted: Sequence[tuple[str, bool]], matched: Mapping[str, Sequence[Any]]
) -> Focused:
    """The candidates of ``admitted`` (key, whether it is spared: it holds an anchor of the
    query or is among the semantic channel's FOCUS_NEAREST_KEPT nearest; best first) that
    speak to far less of the prompt than another does.

    ``matched`` gives, for the first FOCUS_WINDOW at least, each prompt segment's tokens'
    best cosines to the candidate (``focus.matches``); their mean is its focus on the
    segment. A candidate is left out when its best focus is more than FOCUS_SPREAD under
    the best of the window's on that same segment (an entry that repeats the prompt's
    instructions word for word sets no bar for the answer to its question), unless:
    - it is spared: it holds an anchor of the query (the prompt names what it holds), or
      it is the nearest in meaning (no evidence that it speaks to something else);
    - it says a word of that segment no better-ranked candidate says: a token it matches
      at FOCUS_WORD or more, FOCUS_WORD_MARGIN above every better-ranked candidate of the
      window ("Celery, logging and the webhook secret" is answered by three entries);
    - it has no focus (past the window)."""
    means = {key: _focus_means(segments) for key, segments in matched.items()}
    focused = {key: max(values, default=0.0) for key, values in means.items()}
    window = [means[key] for key, _ in admitted[:FOCUS_WINDOW] if key in means]
    if not window:
        return Focused(focused, frozenset())
    best = [max(values) for values in zip(*window, strict=True)]
    typical = [float(np.median(values)) for values in zip(*window, strict=True)]
    lift = {
        key: max(
            (value - FOCUS_CROWD * usual for value, usual in zip(values, typical, strict=True)),
            default=0.0,
        )
        for key, values in means.items()
    }
    left_out = set()
    better: list[str] = []
    for key, anchored in admitted:
        values = means.get(key)
        if values and not anchored:
            segment = values.index(focused[key])
            if focused[key] < best[segment] - FOCUS_SPREAD and not _says_more(
                matched[key][segment], [matched[other][segment] for other in better]
            ):
                left_out.add(key)
        if key in matched:
            better.append(key)
    return Focused(focused, frozenset(left_out), lift)


def _focus_means(segments: Sequence[Any]) -> list[float]:
    """A candidate's focus on each segment: the mean of the segment's token matches."""
    return [float(tokens.mean()) if len(tokens) else 0.0 for tokens in segments]


def _says_more(tokens: Any, better: Sequence[Any]) -> bool:
    """Whether a candidate matching a segment's tokens as ``tokens`` says one of them
    clearly, and clearly more than every candidate of ``better`` does."""
    said = np.asarray(tokens) >= FOCUS_WORD
    if better:
        said &= np.asarray(tokens) >= np.max(np.stack(better), axis=0) + FOCUS_WORD_MARGIN
    return bool(said.any())
