"""The analyzer's runs of term characters (``analyzer._runs``) and CJK tokens are the
ones the per-character version gave (issue 27: it took 10 ms a pass over a prompt of
8,192 ideographs, and a prepare makes three): the same tokens, so nothing indexed
before needs rebuilding. Pure: no database."""

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.search import analyzer


def runs_the_old_way(text):
    run, run_is_cjk = [], False
    for char in text:
        if not analyzer._is_term_char(char):
            if run:
                yield "".join(run), run_is_cjk
                run = []
            continue
        char_is_cjk = analyzer._is_cjk(char)
        if run and char_is_cjk != run_is_cjk:
            yield "".join(run), run_is_cjk
            run = []
        run.append(char)
        run_is_cjk = char_is_cjk
    if run:
        yield "".join(run), run_is_cjk


def tokens_the_old_way(text):
    if text.isascii():
        return analyzer.tokens(text)  # unchanged: the regular expression
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    result = []
    for run, is_cjk in runs_the_old_way(folded):
        if not is_cjk:
            result.append(analyzer.stem(run[: analyzer.MAX_TOKEN_CHARS]))
            continue
        for index, char in enumerate(run):
            result.append(char)
            if index + 1 < len(run):
                result.append(run[index : index + 2])
    return result


# Latin with accents and combining marks, Greek, punctuation, digits, kana, ideographs,
# Hangul, an extension-B ideograph, emoji, "_": every kind of boundary the runs have.
characters = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x24F),
    st.characters(min_codepoint=0x300, max_codepoint=0x3FF),
    st.characters(min_codepoint=0x3000, max_codepoint=0x30FF),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4E3F),
    st.characters(min_codepoint=0xAC00, max_codepoint=0xAC3F),
    st.sampled_from(["\U00020000", "\U0001f600", "_", " ", "\n", "·", "ß", "ǅ", "Ⅻ", "²"]),
)


@settings(max_examples=1000, deadline=None)
@given(text=st.text(alphabet=characters, max_size=40))
def test_the_runs_and_tokens_are_the_old_ones(text):
    assert list(analyzer._runs(text)) == list(runs_the_old_way(text))
    assert analyzer.tokens(text) == tokens_the_old_way(text)


def test_a_prompt_of_ideographs_gives_each_and_each_pair():
    assert analyzer.tokens("数据库连接") == [
        "数",
        "数据",
        "据",
        "据库",
        "库",
        "库连",
        "连",
        "连接",
        "接",
    ]
    assert analyzer.tokens("一") == ["一"]
