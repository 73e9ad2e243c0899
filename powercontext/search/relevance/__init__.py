"""The relevance decision: which candidates a search's evidence supports.

Where each part lives: ``numbers`` (every tuned number, with how it was chosen),
``anchors`` (the query's names and whether an entry holds them), ``evidence`` (the facts
of the query, ``QueryFacts``, and of each candidate, ``Evidence``), ``rules`` (a verdict
for each candidate), ``decision`` (both channels' candidates fused, gathered and judged),
then, for a Context Pack, the passes ``near_duplicates`` and ``focus``.

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
  In a pack for a one-sentence prompt, an entry holding names of it (not an identifier)
  and no other subject of it is anchored only near the best candidate in meaning, and
  judged on its other evidence farther off.
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
  has strong evidence: a strong similarity, or most of a segment's words with meaning
  behind them. An anchor that picks entries out is such evidence on its own only when it
  is all the query asks or the cosine cannot tell (no vector yet, a script the model
  cannot read): a name is not always the name the prompt means.
- **An answer speaks to what the prompt asks** (packs only). A candidate holding no anchor
  of the prompt whose focus (``focus``: how much of a prompt segment
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

from powercontext.search.relevance.anchors import anchor_names, anchor_terms, picks_out, readable
from powercontext.search.relevance.decision import Considered, Ranked, ranked
from powercontext.search.relevance.evidence import Evidence, QueryFacts
from powercontext.search.relevance.focus import Focused, leave_off_focus, off_focus
from powercontext.search.relevance.near_duplicates import duplicates, leave_near_duplicates
from powercontext.search.relevance.rules import ADMITTED, Judgement, Verdict, judge

__all__ = [
    "ADMITTED",
    "Considered",
    "Evidence",
    "Focused",
    "Judgement",
    "QueryFacts",
    "Ranked",
    "Verdict",
    "anchor_names",
    "anchor_terms",
    "duplicates",
    "judge",
    "leave_near_duplicates",
    "leave_off_focus",
    "off_focus",
    "picks_out",
    "ranked",
    "readable",
]
