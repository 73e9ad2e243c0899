"""Redacting secrets left in a scope's stored Memory (``manage.py redact_secrets``): the
``memory`` family's ``redact`` in ``powercontext.maintenance``.

Entry versions are immutable and cited byte for byte. A redaction is the one exception
and is recorded: the version keeps its id (so every citation still resolves, now to the
redacted text), its ``content_hash`` is recomputed over the redacted content (so it
verifies as any other version), and a redaction record keeps that new hash with when and
why. The hash of the original is not kept anywhere: with the redacted text beside it, it
would let anyone test guesses of a redacted password. The change reasons kept in the
Memory revisions are redacted through the kernel (``powercontext.stored_secrets``).

An active version's derived rows follow in the same transaction: its projection row and
full-text row are rewritten, the term counts adjusted, and its vector dropped (the next
``rebuild_index``, run by the command, embeds the redacted text).
"""

import json

from django.db import transaction

from memory.models import ManifestState, MemoryActiveEntry, MemoryEntryVersion
from memory.search_index import MEMORY_INDEX
from memory.services import content_hash, projection_sync, version_verifies
from memory.values import MEMORY_FAMILY
from powercontext import redaction_log
from powercontext.redaction import redact
from powercontext.reports import RedactReport
from powercontext.stored_secrets import revisions_redact


def memory_redact(*, scope_id: str | None, reason: str, dry_run: bool) -> list[RedactReport]:
    """Redact the secrets in stored entry versions and change reasons (one scope or all);
    with ``dry_run`` only count them."""
    versions = RedactReport("memory entry versions")
    rows = MemoryEntryVersion.objects.all()
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    for version_id, text in rows.order_by("pk").values_list("entry_version_id", "text"):
        found = redact(text)
        if not found.count:
            continue
        if dry_run:
            versions.add(dict(found.kinds))
            continue
        with transaction.atomic():
            version = MemoryEntryVersion.objects.select_for_update().get(pk=version_id)
            if version.text != text:
                continue
            if not version_verifies(version):
                versions.unverified.append((version.scope_id, version_id))
                continue
            _redact_version(version, found.text, dict(found.kinds), reason)
        versions.add(dict(found.kinds))
    revisions = RedactReport("memory revisions (change reasons)")
    revisions_redact(
        family=MEMORY_FAMILY,
        report=revisions,
        scope_id=scope_id,
        reason=reason,
        dry_run=dry_run,
    )
    return [versions, revisions]


def _redact_version(
    version: MemoryEntryVersion, text: str, kinds: dict[str, int], reason: str
) -> None:
    new_hash = content_hash(
        kind=version.kind,
        text=text,
        source_refs=json.loads(version.source_refs),
        artifact_refs=json.loads(version.artifact_refs),
    )
    MemoryEntryVersion.objects.filter(pk=version.pk).update(text=text, content_hash=new_hash)
    version.text, version.content_hash = text, new_hash
    redaction_log.record_append(
        scope_id=version.scope_id,
        target=redaction_log.MEMORY_VERSION,
        target_key=version.entry_version_id,
        action=redaction_log.REDACT,
        reason=reason,
        kinds=kinds,
        digest=new_hash,
    )
    if MemoryActiveEntry.objects.filter(entry_version_id=version.pk).exists():
        projection_sync(version, ManifestState.ACTIVE)
        MEMORY_INDEX.drop_vectors(scope_id=version.scope_id, cited_id=version.entry_id)
