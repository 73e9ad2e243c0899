"""What rebuilds, checks and erasures report: plain values that import nothing of the
product, so every module that reports (the kernel's chains, the search indexes, each
family) can name them without importing the maintenance registry that runs them."""

from collections.abc import Callable
from dataclasses import dataclass, field

# (done, total): called after each chunk; total is fixed for one rebuild.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Finding:
    """One thing that is not as the authoritative tables say it must be."""

    check: str
    scope_id: str | None
    subject: str
    message: str

    def __str__(self) -> str:
        where = "" if self.scope_id is None else f"[{self.scope_id}] "
        return f"{self.check}: {where}{self.subject}: {self.message}"


@dataclass
class CheckResult:
    """``checked`` counts the items looked at (revisions, rows, versions ...)."""

    check: str
    checked: int = 0
    findings: list[Finding] = field(default_factory=list)
    # Set when the check could not run here (e.g. a backend without an index check).
    skipped: str | None = None

    def add(self, scope_id: str | None, subject: str, message: str) -> None:
        self.findings.append(Finding(self.check, scope_id, subject, message))


@dataclass
class RebuildReport:
    family: str
    scopes: int = 0
    # Authoritative items the derived state was compared against, and what they are.
    entries: int = 0
    unit: str = "active entries"
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    # What happened to the full-text index, in words.
    index: str = ""
    seconds: float = 0.0
    # Rows repaired in the family's other derived tables, by name.
    derived: dict[str, int] = field(default_factory=dict)
    # Authoritative rows that fail verification (a content hash that does not recompute)
    # and were therefore left out of every projection and index: (scope_id, id). Ids
    # only, never content.
    unverified: list[tuple[str, str]] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return self.inserted + self.updated + self.deleted + sum(self.derived.values())


@dataclass
class RedactReport:
    """What ``redact_secrets`` found (and, unless it was a dry run, redacted) in one kind
    of stored row: how many rows, the secrets by kind, and the rows it left alone because
    they fail verification (redacting them would launder an alteration): ids only."""

    what: str
    rows: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    unverified: list[tuple[str, str]] = field(default_factory=list)
    # Artifact revisions redacted by an earlier release whose hashes were recomputed over
    # what they hold now (``powercontext.stored_secrets``).
    resealed: int = 0

    def add(self, kinds: dict[str, int]) -> None:
        self.rows += 1
        for kind, count in kinds.items():
            self.kinds[kind] = self.kinds.get(kind, 0) + count
