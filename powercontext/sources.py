"""Source capture (prompts): idempotent by id, journalled by a gapless position in a hash
chain that admits erasure (``SourceRecord`` says how the chain is built).

What is captured is never the prompt as sent: ``<private>`` spans are cut and secrets
replaced by markers first (``powercontext.redaction``). What is kept can be erased later:
``source_purge`` (a command, and the retention setting) empties payloads, and
``source_redact`` (``manage.py redact_secrets``) redacts payloads captured before
redaction existed; either leaves the entry's place in the chain and its commitment, and
appends a record to the redaction log.
"""

import hashlib
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from powercontext import redaction_log
from powercontext.capture_ids import stored_source_id
from powercontext.chain import Chain, Walk, canonical_json, next_link, tagged_sha256
from powercontext.exceptions import RevisionConflict, SourceConflict
from powercontext.models import SourceRecord
from powercontext.redaction import Redactions, map_json_strings
from powercontext.reports import CheckResult

CONTENT_SOURCE = "content"
_PAYLOAD_DOMAIN = b"powercontext.source-payload.v1\x00"
_COMMITMENT_DOMAIN = b"powercontext.source-commitment.v1\x00"
_MAX_ATTEMPTS = 50
# A scope's journal: each entry hashed over the one before and its own identity, place
# and commitment (:func:`entry_hash`).
JOURNAL = Chain(b"powercontext.source-entry.v1\x00")


@dataclass(frozen=True)
class CapturedSource:
    source_id: str
    position: int
    redacted: dict[str, int] = field(default_factory=dict)

    def as_payload(self) -> dict[str, Any]:
        return {
            "status": "accepted",
            "source": {"name": CONTENT_SOURCE, "source_id": self.source_id},
            "position": self.position,
        }


def payload_digest(payload: str) -> str:
    """The plain digest of a stored payload (``SourceRecord.payload_hash``)."""
    return tagged_sha256(_PAYLOAD_DOMAIN, payload)


def payload_commitment(salt: str, payload: str) -> str:
    """The salted digest the chain commits to (``SourceRecord.commitment``)."""
    return hashlib.sha256(
        _COMMITMENT_DOMAIN + bytes.fromhex(salt) + payload.encode("utf-8")
    ).hexdigest()


def entry_hash(
    *, previous_hash: str, source_type: str, source_id: str, position: int, commitment: str
) -> str:
    """One link of a scope's journal: over the link before it and the entry's identity,
    place and commitment, never its payload."""
    return JOURNAL.link(previous_hash, source_type, source_id, position, commitment)


def source_capture(
    *, scope_id: str, source_id: str, content: str, metadata: dict[str, Any] | None = None
) -> CapturedSource:
    """Capture a content source, without its ``<private>`` spans and with its secrets (in
    the content and in the metadata's strings) replaced by markers. The same id with the
    same payload (after redaction) answers the original position, as does an id whose
    entry has since been purged; the same id with a different payload raises
    SourceConflict. Positions are 1, 2, 3, ... per scope with no gaps (a lost race for a
    position retries). An id that is a digest of the prompt is stored keyed
    (``powercontext.capture_ids``); the answer names the id as sent."""
    sent_id, source_id = source_id, stored_source_id(source_id)
    redactions = Redactions()
    content = redactions.text(content)
    cleaned = redactions.json(metadata or {})
    payload = canonical_json({"content": content, "metadata": cleaned})
    payload_hash = payload_digest(payload)
    kinds = dict(redactions.kinds)
    for _attempt in range(_MAX_ATTEMPTS):
        existing = _existing(scope_id, source_id, payload_hash)
        if existing is not None:
            return CapturedSource(sent_id, existing, kinds)
        try:
            with transaction.atomic():
                # Locked: ``redact_secrets`` may be re-linking the journal
                # (``legacy_capture_ids``), and this entry must link to the new hash.
                last = (
                    SourceRecord.objects.select_for_update()
                    .filter(scope_id=scope_id)
                    .order_by("-position")
                    .values_list("position", "entry_hash")
                    .first()
                )
                position, previous = next_link(last)
                salt = secrets.token_hex(32)
                commitment = payload_commitment(salt, payload)
                SourceRecord.objects.create(
                    scope_id=scope_id,
                    source_type=CONTENT_SOURCE,
                    source_id=source_id,
                    position=position,
                    payload=payload,
                    payload_hash=payload_hash,
                    salt=salt,
                    commitment=commitment,
                    previous_hash=previous,
                    entry_hash=entry_hash(
                        previous_hash=previous,
                        source_type=CONTENT_SOURCE,
                        source_id=source_id,
                        position=position,
                        commitment=commitment,
                    ),
                    **capture_agent(metadata),
                )
            return CapturedSource(sent_id, position, kinds)
        except IntegrityError:
            # Another writer took this position or this id first: look again.
            continue
    raise RevisionConflict("Could not allocate a source position; retry.")


def _existing(scope_id: str, source_id: str, payload_hash: str) -> int | None:
    record = (
        SourceRecord.objects.filter(
            scope_id=scope_id, source_type=CONTENT_SOURCE, source_id=source_id
        )
        .only("position", "payload_hash", "payload")
        .first()
    )
    if record is None:
        return None
    purged = not record.payload_hash and not record.payload
    if not purged and record.payload_hash != payload_hash:
        raise SourceConflict()
    return record.position


# -- erasure --------------------------------------------------------------------------


def source_key(record: SourceRecord) -> str:
    """An entry's ``target_key`` in the redaction log."""
    return f"{record.source_type}:{record.source_id}#{record.position}"


@dataclass
class Erased:
    """What an erasure did: entries changed, and the secrets redacted by kind."""

    entries: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    # (scope, position) of entries left alone: they fail verification.
    unverified: list[tuple[str, str]] = field(default_factory=list)


def source_purge(
    *,
    reason: str,
    scope_id: str | None = None,
    before: datetime | None = None,
    positions: Iterable[int] = (),
    dry_run: bool = False,
) -> Erased:
    """Empty the payload of captured sources: those of ``scope_id`` at ``positions``, or
    (with ``before``) every one captured before that time, in one scope or all. Each keeps
    its place in the journal (position, id, commitment, links) and loses its payload and
    salt; a ``purge`` record in the redaction log says when and why. Already purged
    entries are left alone. One short transaction per entry."""
    rows = SourceRecord.objects.exclude(payload="", payload_hash="")
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    wanted = list(positions)
    if wanted:
        if scope_id is None:
            raise ValueError("positions need a scope")
        rows = rows.filter(position__in=wanted)
    elif before is not None:
        rows = rows.filter(created_at__lt=before)
    else:
        raise ValueError("say which entries: positions or before")
    done = Erased()
    for pk in rows.order_by("pk").values_list("pk", flat=True).iterator(chunk_size=1000):
        if dry_run:
            done.entries += 1
            continue
        with transaction.atomic():
            record = SourceRecord.objects.select_for_update().filter(pk=pk).first()
            if record is None or (not record.payload and not record.payload_hash):
                continue
            SourceRecord.objects.filter(pk=pk).update(payload="", payload_hash="", salt="")
            redaction_log.record_append(
                scope_id=record.scope_id,
                target=redaction_log.SOURCE,
                target_key=source_key(record),
                action=redaction_log.PURGE,
                reason=reason,
                kinds={},
                digest="",
            )
        done.entries += 1
    return done


def source_redact(*, reason: str, scope_id: str | None = None, dry_run: bool = False) -> Erased:
    """Redact secrets (and ``<private>`` spans) left in captured payloads, those captured
    before capture redacted them: the payload is replaced by its redacted form, its salt
    dropped, and a ``redact`` record carries the new payload's digest. Entries with
    nothing to redact are not touched."""
    rows = SourceRecord.objects.exclude(payload="")
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    erased = redaction_log.latest_digests(redaction_log.SOURCE, scope_id)
    done = Erased()
    for pk, payload in rows.order_by("pk").values_list("pk", "payload").iterator(chunk_size=200):
        redacted, kinds = redact_payload(payload)
        if not kinds:
            continue
        if dry_run:
            _add(done.kinds, kinds)
            done.entries += 1
            continue
        with transaction.atomic():
            record = SourceRecord.objects.select_for_update().get(pk=pk)
            if record.payload != payload:
                continue  # changed meanwhile: the next run looks again
            if not _verifies(record, erased.get((record.scope_id, source_key(record)))):
                done.unverified.append((record.scope_id, f"position {record.position}"))
                continue
            digest = payload_digest(redacted)
            SourceRecord.objects.filter(pk=pk).update(
                payload=redacted, payload_hash=digest, salt=""
            )
            redaction_log.record_append(
                scope_id=record.scope_id,
                target=redaction_log.SOURCE,
                target_key=source_key(record),
                action=redaction_log.REDACT,
                reason=reason,
                kinds=kinds,
                digest=digest,
            )
        _add(done.kinds, kinds)
        done.entries += 1
    return done


def _verifies(record: SourceRecord, erased_digest: str | None) -> bool:
    """Whether an entry's payload is as captured (or as its last redaction left it)."""
    if record.salt:
        return payload_commitment(record.salt, record.payload) == record.commitment
    return erased_digest is not None and payload_digest(record.payload) == erased_digest


def redact_payload(payload: str) -> tuple[str, dict[str, int]]:
    """A stored payload with its content and metadata redacted as capture would have,
    and what went (``{}``: unchanged). A payload that is not a capture is left alone."""
    try:
        value = json.loads(payload)
        content, metadata = value["content"], value.get("metadata") or {}
    except (ValueError, KeyError, TypeError):
        return payload, {}
    if not isinstance(content, str):
        return payload, {}
    redactions = Redactions()
    # Stored text: its markers are this server's, so none is escaped (``stored``).
    content = redactions.stored(redactions.private(content))
    metadata = map_json_strings(metadata, redactions.stored)
    if not redactions.count:
        return payload, {}
    return canonical_json({"content": content, "metadata": metadata}), dict(redactions.kinds)


def _add(total: dict[str, int], kinds: dict[str, int]) -> None:
    for kind, count in kinds.items():
        total[kind] = total.get(kind, 0) + count


# -- verification ---------------------------------------------------------------------


def source_journal_check(*, scope_id: str | None = None) -> CheckResult:
    """Per scope: positions 1..n without gaps, each entry linked to the one before and
    its ``entry_hash`` recomputed; an intact entry's payload matching its commitment and
    its ``payload_hash``; an erased one (no salt) matching the digest its latest
    redaction record left (``""``: purged, so no payload). Findings name positions and
    ids, never content."""
    result = CheckResult("source.journal")
    erased = redaction_log.latest_digests(redaction_log.SOURCE, scope_id)
    rows = SourceRecord.objects.all()
    if scope_id is not None:
        rows = rows.filter(scope_id=scope_id)
    walk: Walk[str] = Walk()
    fields = (
        "scope_id",
        "source_type",
        "source_id",
        "position",
        "payload",
        "payload_hash",
        "salt",
        "commitment",
        "previous_hash",
        "entry_hash",
    )
    for row in rows.order_by("scope_id", "position").values_list(*fields).iterator(chunk_size=500):
        scope, source_type, source_id, position, payload, stored_hash, salt = row[:7]
        commitment, previous_hash, own_hash = row[7:]
        step = walk.step(scope, position, previous_hash, own_hash)
        result.checked += 1
        subject = f"position {position} ({source_type}:{source_id})"
        if not step.in_place:
            result.add(scope, subject, f"expected position {step.expected} here (gap)")
        if not step.linked:
            result.add(scope, subject, "previous_hash does not match the prior entry's hash")
        recomputed = entry_hash(
            previous_hash=previous_hash,
            source_type=source_type,
            source_id=source_id,
            position=position,
            commitment=commitment,
        )
        if recomputed != own_hash:
            result.add(scope, subject, "entry_hash does not match the entry")
        if salt:
            if payload_commitment(salt, payload) != commitment:
                result.add(scope, subject, "payload does not match its commitment")
            if payload_digest(payload) != stored_hash:
                result.add(scope, subject, "payload_hash does not match the payload")
        else:
            digest = erased.get((scope, f"{source_type}:{source_id}#{position}"))
            if digest is None:
                result.add(scope, subject, "payload was erased without a redaction record")
            elif digest == "":
                if payload or stored_hash:
                    result.add(scope, subject, "purged, yet it holds a payload")
            elif payload_digest(payload) != digest or stored_hash != digest:
                result.add(scope, subject, "payload differs from what its redaction left")
    return result


# The agent kinds a hook names in a capture's metadata (``hooks/powercontext_hook.py``);
# anything else counts as "other".
AGENT_KINDS = ("codex", "claude")


def capture_agent(metadata: Any) -> dict[str, str]:
    """The ``agent`` and ``session_key`` columns of a capture with ``metadata``: its
    ``agent`` if a known kind, else "other"; a digest of its ``session_id`` (16 hex
    digits, with the agent, so two agents' sessions never count as one), else "". Derived
    and indexed, so the home page counts the last hour's prompts without reading one."""
    metadata = metadata if isinstance(metadata, dict) else {}
    agent = metadata.get("agent")
    kind = agent if agent in AGENT_KINDS else "other"
    session = metadata.get("session_id")
    if not isinstance(session, str):
        return {"agent": kind, "session_key": ""}
    digest = hashlib.sha256(f"{agent}\x00{session}".encode("utf-8", "surrogatepass"))
    return {"agent": kind, "session_key": digest.hexdigest()[:16]}
