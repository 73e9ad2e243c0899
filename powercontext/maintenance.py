"""Rebuilding and checking what is derived from the authoritative tables (DESIGN.md §3).

The kernel owns the artifact hash chain, which every family shares; each family owns
its derived projections and full-text indexes and registers three functions here:

- ``rebuild(*, scope_id, progress) -> RebuildReport`` (and ``chunk_size`` for a family
  that compares its rows in chunks, ``Family.chunked``): make the family's derived state
  equal what its authoritative rows say, in one transaction per call (a reader sees the
  old state or the new one, never a mix), idempotently;
- ``check(*, scope_id) -> list[CheckResult]``: the family's integrity checks;
- ``index_status() -> str | None``: a cheap "is the index there at all" probe for
  start-up (None when usable).

A family plugs in by registering one ``Family`` from its ``AppConfig.ready()``
(Experience: ``register(Family("experience", "experience.rebuild.experience_rebuild",
...))``), so the kernel names no family, not even by string. Paths are imported lazily,
when a rebuild or check runs, so registering imports nothing.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.utils.module_loading import import_string

from powercontext.artifacts import revision_intact
from powercontext.chain import Walk
from powercontext.models import ArtifactHead, ArtifactRevision
from powercontext.reports import CheckResult, Progress, RebuildReport
from powercontext.snapshot import read_snapshot


@dataclass(frozen=True)
class Family:
    name: str
    rebuild: str
    check: str
    index_status: str
    # Whether ``rebuild`` takes a ``chunk_size`` (``rebuild_index --chunk-size``).
    chunked: bool = False
    # ``redact(*, scope_id, reason, dry_run) -> list[RedactReport]``: redact the secrets
    # left in the family's stored text (``manage.py redact_secrets``); "" for none.
    redact: str = ""

    def load(self, attribute: str) -> Callable[..., Any]:
        return import_string(getattr(self, attribute))


# In registration order (INSTALLED_APPS order): rebuilds and checks run in this order.
FAMILIES: list[Family] = []


def register(family: Family) -> None:
    """Add ``family`` to every rebuild and check (idempotent: ready() may run twice)."""
    if all(known.name != family.name for known in FAMILIES):
        FAMILIES.append(family)


def families(only: str | None = None) -> list[Family]:
    return [family for family in FAMILIES if only is None or family.name == only]


def rebuild(
    *,
    scope_id: str | None = None,
    chunk_size: int = 1000,
    progress: Callable[[str], Progress | None] | None = None,
    family_name: str | None = None,
) -> list[RebuildReport]:
    """Rebuild every family's (or one family's) derived state; ``progress(family)`` may
    return a callback for that family's chunks."""
    from powercontext.search import vectors

    reports = []
    for family in families(family_name):
        callback = progress(family.name) if progress else None
        options = {"chunk_size": chunk_size} if family.chunked else {}
        reports.append(family.load("rebuild")(scope_id=scope_id, progress=callback, **options))
    if family_name is None:
        # After the families: their rebuilds may have rewritten the rows vectors describe.
        reports.extend(vectors.rebuild_all(scope_id=scope_id, progress=progress))
    return reports


def check(*, scope_id: str | None = None) -> list[CheckResult]:
    """Every integrity check: the kernel's hash chains first, then each family's. Each
    check reads what it compares inside one snapshot, so it is safe while serving."""
    from powercontext.redaction_log import redaction_chain_check
    from powercontext.sources import source_journal_check

    with read_snapshot():
        results = [artifact_chain_check(scope_id=scope_id)]
    with read_snapshot():
        results.append(source_journal_check(scope_id=scope_id))
        results.append(redaction_chain_check(scope_id=scope_id))
    from powercontext.search import vectors

    for family in FAMILIES:
        results.extend(family.load("check")(scope_id=scope_id))
    results.extend(vectors.check_all(scope_id=scope_id))
    return results


def scope_has_data(scope_id: str) -> bool:
    """True when any table (of any app) has a row in ``scope_id``: authoritative or
    derived, so a scope holding only stray projection rows still counts. Lets the
    commands tell an unknown (mistyped) scope from a healthy one."""
    return any(
        model._default_manager.filter(scope_id=scope_id).exists()
        for model in apps.get_models()
        if any(field.name == "scope_id" for field in model._meta.concrete_fields)
    )


def missing_indexes() -> dict[str, str]:
    """{family: problem} for each family whose index is not usable."""
    problems = {}
    for family in FAMILIES:
        problem = family.load("index_status")()
        if problem:
            problems[family.name] = problem
    return problems


# -- the kernel's check: every artifact's revision hash chain --------------------------


def artifact_chain_check(*, scope_id: str | None = None) -> CheckResult:
    """Per (scope, family, artifact): revisions 1..n without gaps, each chained to the
    previous one's hash, each hash recomputed from its stored content (or, for a
    revision redacted since, its content exactly what the redaction record left), and a
    head that names exactly revision n."""
    from powercontext.redaction_log import ARTIFACT_REVISION, latest_digests

    result = CheckResult("artifact.chain")
    redacted = latest_digests(ARTIFACT_REVISION, scope_id)
    heads: dict[tuple[str, str, str], int] = {
        (scope, family, artifact): revision
        for scope, family, artifact, revision in _scoped(ArtifactHead, scope_id).values_list(
            "scope_id", "family", "artifact_id", "revision"
        )
    }
    seen: set[tuple[str, str, str]] = set()

    def close(key: tuple[str, str, str], last: int) -> None:
        scope, family, artifact = key
        head = heads.get(key)
        if head is None:
            result.add(scope, f"{family}/{artifact}", f"has revisions up to {last} but no head")
        elif head != last:
            result.add(
                scope,
                f"{family}/{artifact}",
                f"head names revision {head}, latest revision is {last}",
            )

    # Streamed in chain order, so a long history is never held in memory at once.
    rows = (
        _scoped(ArtifactRevision, scope_id)
        .order_by("scope_id", "family", "artifact_id", "revision")
        .values_list(
            "scope_id",
            "family",
            "artifact_id",
            "revision",
            "content",
            "previous_hash",
            "revision_hash",
        )
        .iterator(chunk_size=2000)
    )
    walk: Walk[tuple[str, str, str]] = Walk()
    for scope, family, artifact, revision, content, previous_hash, revision_hash in rows:
        key = (scope, family, artifact)
        if walk.key is not None and key != walk.key:
            close(walk.key, walk.last)
        step = walk.step(key, revision, previous_hash, revision_hash)
        if step.first:
            seen.add(key)
        result.checked += 1
        where = f"{family}/{artifact}@{revision}"
        if not step.in_place:
            result.add(scope, where, f"expected revision {step.expected} here (gap or duplicate)")
        if not step.linked:
            result.add(scope, where, "previous_hash does not match the prior revision's hash")
        intact = revision_intact(
            previous_hash=previous_hash,
            content=content,
            revision_hash=revision_hash,
            redacted_digest=redacted.get((scope, where)),
        )
        if not intact:
            result.add(scope, where, "revision_hash does not match its content")
    if walk.key is not None:
        close(walk.key, walk.last)
    for key in sorted(heads.keys() - seen):
        scope, family, artifact = key
        result.add(scope, f"{family}/{artifact}", f"head names revision {heads[key]}, no revisions")
    return result


def _scoped(model: Any, scope_id: str | None) -> Any:
    queryset = model.objects.all()
    return queryset if scope_id is None else queryset.filter(scope_id=scope_id)
