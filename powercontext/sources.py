"""Source capture (prompts): idempotent by id, journalled by a gapless position."""

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from powercontext.artifacts import canonical_json, tagged_sha256
from powercontext.exceptions import RevisionConflict, SourceConflict
from powercontext.models import SourceRecord

CONTENT_SOURCE = "content"
_PAYLOAD_DOMAIN = b"powercontext.source-payload.v1\x00"
_MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class CapturedSource:
    source_id: str
    position: int

    def as_payload(self) -> dict[str, Any]:
        return {
            "status": "accepted",
            "source": {"name": CONTENT_SOURCE, "source_id": self.source_id},
            "position": self.position,
        }


def source_capture(
    *, scope_id: str, source_id: str, content: str, metadata: dict[str, Any] | None = None
) -> CapturedSource:
    """Capture a content source. The same id with the same payload answers the original
    position; the same id with a different payload raises SourceConflict. Positions are
    1, 2, 3, ... per scope with no gaps (a lost race for a position retries)."""
    payload = canonical_json({"content": content, "metadata": metadata or {}})
    payload_hash = payload_digest(payload)
    for _attempt in range(_MAX_ATTEMPTS):
        existing = _existing(scope_id, source_id, payload_hash)
        if existing is not None:
            return existing
        try:
            with transaction.atomic():
                last = SourceRecord.objects.filter(scope_id=scope_id).aggregate(Max("position"))
                position = (last["position__max"] or 0) + 1
                SourceRecord.objects.create(
                    scope_id=scope_id,
                    source_type=CONTENT_SOURCE,
                    source_id=source_id,
                    position=position,
                    payload=payload,
                    payload_hash=payload_hash,
                )
            return CapturedSource(source_id, position)
        except IntegrityError:
            # Another writer took this position or this id first: look again.
            continue
    raise RevisionConflict("Could not allocate a source position; retry.")


def payload_digest(payload: str) -> str:
    """The ``payload_hash`` of a stored payload (its canonical JSON text)."""
    return tagged_sha256(_PAYLOAD_DOMAIN, payload)


def _existing(scope_id: str, source_id: str, payload_hash: str) -> CapturedSource | None:
    record = (
        SourceRecord.objects.filter(
            scope_id=scope_id, source_type=CONTENT_SOURCE, source_id=source_id
        )
        .only("position", "payload_hash")
        .first()
    )
    if record is None:
        return None
    if record.payload_hash != payload_hash:
        raise SourceConflict()
    return CapturedSource(source_id, record.position)
