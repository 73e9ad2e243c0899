"""Per-scope term document frequencies, as the Memory and Experience families keep them.

A family's count model has ``scope_id``, ``term`` and ``documents`` (unique per scope and
term), and the empty term counts the scope's documents. Counts change in the same
transaction as the documents they describe, so a read snapshot always sees counts that
agree with the index it searches (``powercontext.search.policy`` weighs terms by them).
"""

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from django.apps import apps
from django.db import connection

from powercontext.fields import identity_text
from powercontext.search.indexes import SearchIndex
from powercontext.search.policy import SearchPlan, countable_terms, plan_search

DOCUMENTS_TERM = ""


def document_terms(searchable_text: str) -> set[str]:
    """The distinct terms one document contributes (its analyzed text's tokens)."""
    return set(searchable_text.split())


class TermCounts:
    """The counts kept in ``model``."""

    # The term whose count is the scope's number of documents.
    DOCUMENTS = DOCUMENTS_TERM

    def __init__(self, model: Any):
        self.model = model

    def adjust(self, *, scope_id: str, removed: str | None, added: str | None) -> None:
        """Move the counts from one document text to the next (either may be None)."""
        deltas: Counter[str] = Counter()
        if removed is not None:
            deltas.subtract(dict.fromkeys(document_terms(removed), 1))
            deltas[DOCUMENTS_TERM] -= 1
        if added is not None:
            deltas.update(dict.fromkeys(document_terms(added), 1))
            deltas[DOCUMENTS_TERM] += 1
        self._apply(scope_id, {term: delta for term, delta in deltas.items() if delta})

    def _apply(self, scope_id: str, deltas: dict[str, int]) -> None:
        if not deltas:
            return
        table = connection.ops.quote_name(self.model._meta.db_table)
        if connection.vendor == "sqlite":
            upsert = (
                f"INSERT INTO {table} (scope_id, term, documents) VALUES (%s, %s, %s) "  # noqa: S608
                "ON CONFLICT (scope_id, term) "
                "DO UPDATE SET documents = documents + excluded.documents"
            )
        else:
            upsert = (
                f"INSERT INTO {table} (scope_id, term, documents) VALUES (%s, %s, %s) "  # noqa: S608
                "ON DUPLICATE KEY UPDATE documents = documents + VALUES(documents)"
            )
        # Sorted: concurrent writers touch rows in one order.
        rows = [(scope_id, term, delta) for term, delta in sorted(deltas.items())]
        with connection.cursor() as cursor:
            cursor.executemany(upsert, rows)
        shrunk = [term for term, delta in deltas.items() if delta < 0]
        if shrunk:
            self.model.objects.filter(scope_id=scope_id, term__in=shrunk, documents__lte=0).delete()

    def search_plan(
        self,
        *,
        scope_id: str,
        terms: list[str],
        recurring: Collection[str] = frozenset(),
        segments: Sequence[Collection[str]] | None = None,
    ) -> SearchPlan:
        """How the query ``terms`` are searched in this scope (``policy.plan_search``),
        counting only those a search could weigh."""
        candidates = countable_terms(terms)
        if not candidates:
            return plan_search([], {}, 0)
        frequencies, documents = self.frequencies(scope_id=scope_id, terms=candidates)
        return plan_search(candidates, frequencies, documents, recurring, segments)

    def frequencies(self, *, scope_id: str, terms: Iterable[str]) -> tuple[dict[str, int], int]:
        """(documents of the scope containing each term, documents in the scope)."""
        wanted = [*terms, DOCUMENTS_TERM]
        # Every prepare runs this twice (Memory and Experience), with up to a whole
        # prompt's terms: the ORM spent several times longer preparing such an IN list
        # than the indexed lookups take, so the statement is written here.
        table = connection.ops.quote_name(self.model._meta.db_table)
        placeholders = ", ".join(["%s"] * len(wanted))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT term, documents FROM {table} "  # noqa: S608 - names and placeholders only
                f"WHERE scope_id = %s AND term IN ({placeholders})",
                [scope_id, *wanted],
            )
            # ``term`` is an identity column: VARBINARY on OceanBase, read back as bytes.
            counts = {identity_text(term): documents for term, documents in cursor.fetchall()}
        documents = counts.pop(DOCUMENTS_TERM, 0)
        return counts, documents

    @staticmethod
    def expected(searchable_texts: Iterable[str]) -> Counter[str]:
        """What one scope's counts should be for these documents (rebuilds, integrity)."""
        counts: Counter[str] = Counter()
        for text in searchable_texts:
            counts.update(document_terms(text))
            counts[DOCUMENTS_TERM] += 1
        return counts


def counts_of(index: SearchIndex) -> TermCounts:
    """The term counts ``index`` declares (``SearchIndex.term_counts``)."""
    if index.term_counts is None:
        raise ValueError(f"{index.name}: the index declares no term counts")
    return TermCounts(apps.get_model(index.term_counts))
