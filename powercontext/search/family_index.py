"""A family's declared index, and everything the family does with it.

A family declares its index as a :class:`FamilyIndex` (a ``SearchIndex`` with the wing's
operations on it) and then reaches the wing only through that value and the query:
search it, tell whether a scope has rows in it, keep it in step with the rows it
describes (their analysed text, the per-scope term counts, the vectors), and check or
rebuild it. Each method hands the declaration to the wing's module that does the work
(``query``, ``engines``, ``term_counts``, ``vectors``), so none of those is a family's
concern and the family's import list stays short.
"""

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager

from powercontext.search import analyzer, query, vectors
from powercontext.search.engines import index_ddl, search_engine
from powercontext.search.indexes import IndexRow, SearchIndex, register_index, scope_token
from powercontext.search.policy import countable_terms, term_decisions
from powercontext.search.term_counts import TermCounts, counts_of
from powercontext.search.vectors import Embedded


class FamilyIndex(SearchIndex):
    """A declared index (its fields are ``SearchIndex``'s) with the operations its family
    calls. Frozen and compared like the declaration it is."""

    # Declaring

    def register(self) -> None:
        """Make the index known to the wing (from the family's ``AppConfig.ready``):
        rebuilds, checks and the vector channel's catch-up then cover it."""
        register_index(self)

    def ddl(self, engine: str) -> tuple[list[str], list[str]]:
        """(forward, reverse) statements of the lexical index on ``engine`` ("sqlite",
        "oceanbase"): what the family's migration runs and a rebuild recreates."""
        return index_ddl(engine, self)

    # Searching (in the caller's read snapshot)

    def search(self, found_by: query.Query, *, scope_id: str, limit: int) -> query.Searched:
        """``powercontext.search.search`` of this index."""
        return query.search(self, found_by, scope_id=scope_id, limit=limit)

    def lookup(self, text: str, *, mode: str = query.AUTO) -> query.Query:
        """An explicit search of this index for ``text`` (``Query.lookup``)."""
        return query.Query.lookup(text, index=self, mode=mode)

    def holds_rows(self, *, scope_id: str) -> bool:
        """Whether the scope has any row in this index (``powercontext.search.holds_rows``)."""
        return query.holds_rows(self, scope_id=scope_id)

    def term_fates(
        self, terms: list[str], recurring: Collection[str], *, scope_id: str
    ) -> tuple[int, list[tuple[str, str, int | None]]]:
        """How a search of this index in ``scope_id`` treats each of a query's ``terms``,
        from the counts it plans with: the scope's document count, and ``(term, decision,
        documents holding it)`` in query order (None for a term never counted: a stop
        word). For explaining a pack to a person."""
        counted = countable_terms(terms)
        frequencies, documents = self.counts.frequencies(scope_id=scope_id, terms=counted)
        counted_set = set(counted)
        return documents, [
            (term, decision, frequencies.get(term, 0) if term in counted_set else None)
            for term, decision in term_decisions(terms, frequencies, documents, recurring)
        ]

    # Keeping the index in step with its rows (in the transaction that changes them)

    @staticmethod
    def analysed(text: str) -> str:
        """The text a row stores for this index: the analyzer's space-separated terms."""
        return analyzer.searchable_text(text)

    @staticmethod
    def scope_token(scope_id: str) -> str:
        """The term that marks a scope's rows, for an index kept by the engine, whose
        rows store it (``scope_token_column``)."""
        return scope_token(scope_id)

    @property
    def counts(self) -> TermCounts:
        """The per-scope term counts the index declares (``term_counts``)."""
        return counts_of(self)

    def write(
        self, *, row_key: int, scope_id: str, cited_id: str, version: int | str, text: str
    ) -> None:
        """Make a write-kept index describe one row as the transaction has just left it."""
        search_engine().write(self, [IndexRow(row_key, scope_id, cited_id, version, text)])

    def embed(self, documents: Sequence[str]) -> Embedded:
        """The documents' vectors, computed before the write transaction (the model holds
        no lock); empty when this index has no vector channel or the model is off."""
        return vectors.embed_for(self, documents)

    def writing_vectors(
        self, embedded: Embedded, *, scope_id: str, cited_id: str
    ) -> AbstractContextManager[None]:
        """Around the statements that change the row citing ``cited_id``: its vector is
        then ``embedded``'s, or gone with the row (``vectors.writing``)."""
        return vectors.writing(self, embedded, scope_id=scope_id, cited_id=cited_id)

    def write_vectors(
        self, embedded: Embedded, *, scope_id: str, cited_id: str, document: str
    ) -> None:
        """The vector of the row citing ``cited_id`` is ``document``'s (``vectors.write_cited``)."""
        vectors.write_cited(self, embedded, scope_id=scope_id, cited_id=cited_id, document=document)

    def drop_vectors(self, *, scope_id: str, cited_id: str) -> None:
        """Delete the vector of the row citing ``cited_id``: its text was redacted."""
        vectors.drop_cited(self, scope_id=scope_id, cited_id=cited_id)

    # Checking and rebuilding

    def status(self) -> str | None:
        """None when the index's lexical objects all exist, else a short reason."""
        return search_engine().status(self)

    @property
    def checks_integrity(self) -> bool:
        """Whether the engine can look inside the index (``integrity`` is None if not)."""
        return search_engine().checks_integrity

    def integrity(self) -> str | None:
        """None when the index agrees with its rows (or the engine cannot tell), else
        the reason."""
        return search_engine().integrity(self)

    def rebuild(self, scope_id: str | None = None) -> None:
        """Make the lexical index describe its rows again (``SearchEngine.rebuild``)."""
        search_engine().rebuild(self, scope_id)
