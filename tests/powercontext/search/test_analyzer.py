"""The analyzer: one tokenisation for writes and queries, on every backend."""

import re
import sqlite3
from importlib import import_module

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.search import analyzer

# The tokenizer the Memory index is created with (migration memory.0002).
MEMORY_TOKENIZER = re.search(
    r"tokenize=(\"[^\"]*\")",
    import_module("memory.migrations.0002_fulltext_sqlite").FORWARD[0],
).group(1)

text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",)),
    max_size=300,
)


def test_cjk_runs_become_unigrams_and_bigrams():
    assert analyzer.tokens("中文测试") == ["中", "中文", "文", "文测", "测", "测试", "试"]


def test_cjk_next_to_latin_splits_into_separate_runs():
    assert analyzer.tokens("pytest测试ok") == ["pytest", "测", "测试", "试", "ok"]


def test_casefold_and_nfc():
    assert analyzer.tokens("STRASSE Straße") == ["strass", "strass"]
    assert analyzer.tokens("cafe\u0301") == analyzer.tokens("caf\u00e9") == ["caf\u00e9"]


def test_identifiers_and_numbers_are_kept_whole():
    tokens = analyzer.tokens("test_api v2 0x1F mem_ent_12")
    assert tokens == ["test_api", "v2", "0x1f", "mem_ent_12"]


def test_english_words_are_stemmed():
    assert analyzer.tokens("Researching researched research") == ["research"] * 3
    assert analyzer.tokens("Running deploys") == ["run", "deploy"]


def test_query_syntax_is_only_text():
    assert analyzer.tokens('"a" * -b NEAR(c) AND: d^') == ["a", "b", "near", "c", "and", "d"]
    assert analyzer.tokens("\x00 😀 \x1b[31m") == ["31m"]


def test_long_runs_are_cut():
    (token,) = analyzer.tokens("x" * 500)
    assert len(token) == analyzer.MAX_TOKEN_CHARS


def test_words_with_combining_vowel_signs_stay_whole():
    assert analyzer.tokens("हिन्दी भाषा") == ["हिन्दी", "भाषा"]


def test_query_terms_are_distinct_in_first_seen_order():
    assert analyzer.query_terms("b a b c a") == ["b", "a", "c"]


@settings(max_examples=300, deadline=None)
@given(text)
def test_tokens_are_deterministic_nonempty_and_space_free(value):
    tokens = analyzer.tokens(value)
    assert tokens == analyzer.tokens(value)
    assert all(token and not any(char.isspace() for char in token) for token in tokens)
    assert analyzer.searchable_text(value).split() == tokens


@settings(max_examples=200, deadline=None)
@given(st.lists(text, min_size=1, max_size=5))
def test_fts5_splits_searchable_text_exactly_at_the_analyzers_spaces(values):
    # The FTS5 table of migration memory.0002 uses this tokenizer; if it ever split a token
    # further (or merged two), indexing and querying would disagree.
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize={MEMORY_TOKENIZER})")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    for value in values:
        db.execute("INSERT INTO t(body) VALUES (?)", [analyzer.searchable_text(value)])
    indexed = {term for (term,) in db.execute("SELECT term FROM v")}
    expected = {token for value in values for token in analyzer.tokens(value)}
    assert indexed == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_ascii_fast_path_agrees_with_the_general_path(value):
    # A non-ASCII character that yields no token forces the general path.
    assert analyzer.tokens(value) == analyzer.tokens(value + " \u00a0")
