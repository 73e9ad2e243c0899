"""Source capture (prompts): idempotent by id, journalled by a gapless position."""

import hashlib
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
    payload_hash = tagged_sha256(_PAYLOAD_DOMAIN, payload)
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
                    **capture_agent(metadata),
                )
            return CapturedSource(source_id, position)
        except IntegrityError:
            # Another writer took this position or this id first: look again.
            continue
    raise RevisionConflict("Could not allocate a source position; retry.")


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
