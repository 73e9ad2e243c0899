"""``memory_documents``: the texts the focus rule reads for a pack's window, by projection
row key (a plain statement on either engine)."""

from memory.models import MemoryActiveEntry
from memory.search_index import memory_documents
from memory.services import memory_entry_revise, memory_remember


def test_each_row_gives_the_text_of_the_version_it_names_now(db):
    first = memory_remember(scope_id="scope-a", kind="note", text="The deploy runs on Fridays.")
    memory_remember(scope_id="scope-a", kind="note", text="Invoices close at midnight UTC.")
    memory_remember(scope_id="scope-b", kind="gotcha", text="Staging uses the orca VPN.")
    assert first.entry is not None
    memory_entry_revise(
        scope_id="scope-a",
        citation=first.entry.citation,
        kind="note",
        text="The deploy runs on Thursdays now.",
    )
    rows = MemoryActiveEntry.objects.select_related("entry_version")
    expected = {row.pk: row.entry_version.text for row in rows}
    assert len(expected) == 3
    assert "The deploy runs on Thursdays now." in expected.values()

    assert memory_documents(list(expected)) == expected
    some = sorted(expected)[:2]
    assert memory_documents([*some, max(expected) + 1000]) == {key: expected[key] for key in some}
    assert memory_documents([]) == {}
