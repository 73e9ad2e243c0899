"""The relevance decision's numbers, each with how it was chosen.

Every rule reads them here at call time (``numbers.SEMANTIC_FLOOR``), never as a copy, so
that a bench replaying the decision with other values sets them on this one module
(``bench/relevance_replay.py --set NAME=VALUE``, ``bench/relevance_fit.py --choose``).
"""

# Fused scores that tie exactly (the best of the words alone and the best of the meaning
# alone both score one half) go to the nearer in meaning when 1, to the stronger in words
# when 0 (``powercontext.search.fusion.fuse``), never to an entry's random id (a pack
# then differed between two installs of the same data). bench/relevance_fit.py --choose
# TIES_BY_MEANING=0,1: the same figures held out either way (coding recall_any 90.2 %,
# precision 47.8 %; LoCoMo bare 73.9 / 61.4 %, wrapped 67.6 %); meaning first, as the
# channel that finds paraphrases.
TIES_BY_MEANING = 1
# How many of the engine's best lexical candidates are read, to be cut to the candidate
# pool (``policy.CANDIDATE_POOL``) by the scope's own term counts (``ranking.rank``). The
# engine orders by its relevance, whose term counts span every scope of the table: with
# more matches than the pool, which ones a scope's prompt got depended on what other
# scopes held. Up to this many matches, the cut is the scope's alone.
# bench/relevance_fit.py --choose LEXICAL_REACH=50,100,200,400: every LoCoMo fold chose
# 100 (wrapped held out 67.6 -> 68.4 %); every coding fold 50, by 0.1 point of precision
# (recall the same at every reach). docs/relevance.md, section 2.
LEXICAL_REACH = 100
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
# Capitalised words one space apart are one name when 1 ("Split View", "Savings Plans",
# "Dynamic Island": an entry holds it when it holds every word, or all but one of three or
# more: ``anchors.held``), each word its own name when 0. docs/relevance.md, "Capitalised
# words one space apart".
COMPOUND_NAMES = 1
# A query whose one content word comes with at most ONE_WORD_QUERY_TERMS terms in all
# (stop words counted) names that word, as an identifier does: "deployment", a tag. In
# a sentence it is a word like any other: an agent's follow-ups ("what did you just run?",
# "fix it", "what failed?") filled packs with every entry holding "run", "fix" or "fail".
# (The figures: docs/relevance.md, "A sentence around one word".)
ONE_WORD_QUERY_TERMS = 1
# Packs, one-sentence prompts: an entry holding only names of the query (no identifier,
# no other subject of it) is anchored only within NAME_SPREAD of the best candidate's
# cosine; farther, it is judged on its other evidence. First for the names most entries
# hold (as COMMON_ANCHOR_SPREAD: "Terraform" in a Terraform estate admitted every note
# naming it). bench/relevance_fit.py --choose COMMON_ANCHOR_SPREAD=9,0.3,0.25,0.2,0.15,0.1:
# recall unchanged at every value, coding precision 47.8 -> 51.0 % at 0.2 and 52.4 % at
# 0.1 (every project chose 0.1), but from 0.15 LoCoMo's bare questions lose answers (a
# speaker's turns answer questions about them from far in meaning: all-evidence 61.4 ->
# 61.1 %), and four conversations of five chose 0.2 (the fifth found no difference).
# Then for every name that is not an identifier (a name few entries hold admitted them
# all too), the spread patched in as its own number: --choose 9,0.3,0.25,0.2 and
# 9,0.2,0.15,0.1: recall unchanged, coding precision 51.0 -> 51.9 % at 0.2 and 52.0 % at
# 0.15, where LoCoMo's bare questions lose one answer again (74.0 / 61.5 -> 73.9 / 61.4 %);
# six projects chose 0.15, lianjie-gateway 0.2, and no project left out paid. Both times
# 0.2 is the narrowest no held-out set pays for: one spread for every name.
NAME_SPREAD = 0.2
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
# The window of that best focus, and of the median a candidate's lift is measured against
# (FOCUS_CROWD): nearly the whole candidate pool (``policy.CANDIDATE_POOL``, 50). With 16,
# an answer ranked past the sixteenth was never compared with the window and a long
# prompt's window was mostly its subject's entries. bench/relevance_fit.py --record (16,
# 24, 32, 48 around the 16 it was): six coding folds of seven chose 48, lianjie-gateway's
# 32, none lost an answer; through the server recall_any 90.2 -> 90.5 % cold, 89.7 -> 90.2
# % captured, LoCoMo every figure up (docs/relevance.md, section 6); a wrapped prompt's
# prepare 9 % dearer (more documents' tokens compared), a short one's the same.
FOCUS_WINDOW = 48
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
