"""Keying the capture ids an earlier release stored as the hook sent them
(``manage.py redact_secrets``, and every import).

Before ``powercontext.capture_ids`` a hook's capture was stored under ``prompt:`` +
sha256 over the prompt as typed, secrets included: the id confirms a guess of what
redaction or a purge took. Here each such id is replaced by its keyed form in the source
journal and in the redaction log's records that name its entry. Both chains hash the id
(the journal's entry hash, the record's target key), so in one transaction per scope the
journal from the first keyed entry on and the log from the first renamed record on are
verified, then hashed again and re-linked. One link that fails verification stops its
scope, named, with nothing rewritten (re-linking it would launder an alteration).
"""

from django.db import transaction

from powercontext import redaction_log
from powercontext.capture_ids import CAPTURE_ID, is_digest, stored_source_id
from powercontext.chain import Walk
from powercontext.models import RedactionRecord, SourceRecord
from powercontext.reports import RedactReport
from powercontext.sources import entry_hash, source_key

# What an entry's link is made of, and its key.
_LINK_FIELDS = (
    "pk",
    "scope_id",
    "source_type",
    "source_id",
    "position",
    "commitment",
    "previous_hash",
    "entry_hash",
)


class _Unverified(Exception):
    def __init__(self, subject: str) -> None:
        super().__init__(subject)
        self.subject = subject


def sources_key(*, scope_id: str | None = None, dry_run: bool = False) -> RedactReport:
    """Key every capture id of the hook's form stored as sent (in one scope or all);
    the report counts the entries keyed (as kind ``capture_id``) and names the scopes
    left alone."""
    report = RedactReport("capture ids stored as the hook sent them")
    rows = SourceRecord.objects.filter(source_id__startswith="prompt:")
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    legacy: dict[str, int] = {}
    for scope, source_id in rows.values_list("scope_id", "source_id").iterator(chunk_size=500):
        if is_digest(source_id):
            legacy[scope] = legacy.get(scope, 0) + 1
    for scope in sorted(legacy):
        if dry_run:
            _count(report, legacy[scope])
            continue
        try:
            with transaction.atomic():
                keyed = _key_scope(scope)
        except _Unverified as unverified:
            report.unverified.append((scope, unverified.subject))
            continue
        _count(report, keyed)
    return report


def _count(report: RedactReport, entries: int) -> None:
    report.rows += entries
    report.kinds[CAPTURE_ID] = report.kinds.get(CAPTURE_ID, 0) + entries


def _key_scope(scope_id: str) -> int:
    """In the caller's transaction: the scope's journal entries keyed and re-linked, then
    its log's records renamed and re-linked; how many entries were keyed. The journal is
    locked before the log, as a purge takes them."""
    # Every entry, locked: a capture locks the latest entry before it links to its hash,
    # so none links to a hash being rewritten (on SQLite the write lock does that).
    journal = list(
        SourceRecord.objects.select_for_update()
        .filter(scope_id=scope_id)
        .only(*_LINK_FIELDS)  # not the payloads: a scope may hold thousands of prompts
        .order_by("position")
    )
    legacy = [at for at, record in enumerate(journal) if is_digest(record.source_id)]
    if not legacy:
        return 0
    first = legacy[0]
    _verify_journal(journal, first)
    taken = {record.source_id for record in journal}
    renamed: dict[str, str] = {}
    for at in legacy:
        record = journal[at]
        keyed = stored_source_id(record.source_id)
        if keyed in taken:
            # The same prompt captured again under its keyed id since: the older entry
            # keeps its place under a name of its own, unique and still no digest.
            keyed = f"{keyed}@{record.position}"
        taken.add(keyed)
        old_key = source_key(record)
        record.source_id = keyed
        renamed[old_key] = source_key(record)
    previous = journal[first].previous_hash
    for record in journal[first:]:
        record.previous_hash = previous
        record.entry_hash = _entry_hash(record)
        previous = record.entry_hash
    SourceRecord.objects.bulk_update(
        journal[first:], ["source_id", "previous_hash", "entry_hash"], batch_size=500
    )
    _rename_records(scope_id, renamed)
    return len(legacy)


def _entry_hash(record: SourceRecord) -> str:
    return entry_hash(
        previous_hash=record.previous_hash,
        source_type=record.source_type,
        source_id=record.source_id,
        position=record.position,
        commitment=record.commitment,
    )


def _verify_journal(journal: list[SourceRecord], first: int) -> None:
    """Raises _Unverified unless every entry from ``first`` on (``journal``: the whole
    scope, in order) holds its place, names the hash of the entry before it and hashes
    to what it keeps."""
    walk: Walk[str] = Walk()
    for at, entry in enumerate(journal):
        step = walk.step(entry.scope_id, entry.position, entry.previous_hash, entry.entry_hash)
        if at >= first and not (
            step.in_place and step.linked and _entry_hash(entry) == entry.entry_hash
        ):
            raise _Unverified(f"position {entry.position}")


def _verify_log(log: list[RedactionRecord], first: int) -> None:
    """:func:`_verify_journal` for the scope's redaction ``log``."""
    walk: Walk[str] = Walk()
    for at, record in enumerate(log):
        step = walk.step(record.scope_id, record.seq, record.previous_hash, record.record_hash)
        if at >= first and not (
            step.in_place
            and step.linked
            and redaction_log.stored_record_hash(record) == record.record_hash
        ):
            raise _Unverified(f"redaction record {record.seq}")


def _rename_records(scope_id: str, renamed: dict[str, str]) -> None:
    """The scope's redaction records naming a keyed entry renamed, and the log from the
    first of them on verified, hashed again and re-linked."""
    log = list(
        RedactionRecord.objects.select_for_update().filter(scope_id=scope_id).order_by("seq")
    )
    named = [
        at
        for at, record in enumerate(log)
        if record.target == redaction_log.SOURCE and record.target_key in renamed
    ]
    if not named:
        return
    first = named[0]
    _verify_log(log, first)
    for at in named:
        log[at].target_key = renamed[log[at].target_key]
    previous = log[first].previous_hash
    for record in log[first:]:
        record.previous_hash = previous
        record.record_hash = redaction_log.stored_record_hash(record)
        previous = record.record_hash
    RedactionRecord.objects.bulk_update(
        log[first:], ["target_key", "previous_hash", "record_hash"], batch_size=500
    )
