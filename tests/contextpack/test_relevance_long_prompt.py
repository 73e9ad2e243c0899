"""Relevance on real prompts (DESIGN.md §5): the hook sends the whole prompt as the query.

A memory that shares one rare term with a long prompt full of instructions must still be
recalled, even in a scope full of entries that share the prompt's boilerplate. Only the
HTTP API is used, so this holds for every search backend.
"""

import pytest

from tests.api_calls import cited, prepare

SCOPE = "git:example.com/team/relevance"

TARGET = "Deploys to staging need the VPN profile named orca loaded first."

PROMPT = (
    "Before you change anything, read the notes from our earlier sessions and check what "
    "we already know. Please run the full test suite before and after your change and tell "
    "me which tests you ran and what failed, if anything. Be concise. Follow the repository "
    "rules in CONTRIBUTING.md and keep the existing code style; don't reformat files you "
    "are not otherwise editing. Don't touch unrelated files, don't add new dependencies "
    "without asking, and don't commit or push anything: I will review the diff myself.\n\n"
    "The deploy to staging hangs at the login step again; does orca have anything to do "
    "with it?\n\n"
    "When you are done, summarise what you changed in two or three sentences, mention any "
    "follow-up work you noticed but did not do, and leave the branch uncommitted so I can "
    "look at it. Keep answers short and use bullet points for lists."
)

# Entries an agent really keeps, written with the same instruction vocabulary as the
# prompt: they share many of its words, none of them rare.
BOILERPLATE = [
    "Always run the full test suite before you push; the tests take about {n} minutes.",
    "Follow the repository rules: keep the existing code style and don't reformat files.",
    "Don't add new dependencies without asking; review the diff before you commit.",
    "Tell the user which tests you ran and what failed, and keep answers short.",
    "Summarise what you changed in two or three sentences and mention follow-up work.",
    "Leave the branch uncommitted so the reviewer can look at the diff (note {n}).",
    "Use bullet points for lists and be concise when you report back (rule {n}).",
    "Read the notes from earlier sessions before you change anything in module {n}.",
]


@pytest.mark.django_db
@pytest.mark.parametrize("copies", [2, 12], ids=["small-scope", "large-scope"])
def test_a_rare_shared_term_is_recalled_inside_a_long_prompt(api, remember, copies):
    for n in range(copies):
        for text in BOILERPLATE:
            remember(text.format(n=n), scope_id=SCOPE)
    target = remember(TARGET, scope_id=SCOPE)["entry"]["citation"]["entry_id"]

    assert len(PROMPT.encode()) > 800
    assert target in cited(prepare(api, SCOPE, PROMPT))


@pytest.mark.django_db
def test_function_words_of_a_prompt_do_not_fill_the_pack_in_a_small_scope(api, remember):
    # A young scope: every word is rare in it, "before" and "which" included. Entries that
    # share only such words with the prompt are noise, not context.
    for text in [
        "Which port does the dev server listen on? 8080, before the proxy starts.",
        "After the upgrade, anything older than Python 3.11 is unsupported.",
        "If the cache is cold, then the first request is slow.",
    ]:
        remember(text, scope_id=SCOPE)
    target = remember(TARGET, scope_id=SCOPE)["entry"]["citation"]["entry_id"]

    assert cited(prepare(api, SCOPE, PROMPT)) == [target]
