"""The kernel's streams: Artifact revisions with their hash chains, Artifact heads and
captured sources with their journal positions; and the models it leaves out.

Registered by ``PowerContextConfig.ready()`` before any family's streams (the kernel's
app is first in INSTALLED_APPS), so revisions are read and written before the family
rows that describe them.
"""

from collections.abc import Mapping
from typing import Any

from powercontext import redaction_log
from powercontext.archive.streams import Stream, register_left_out, register_stream
from powercontext.artifacts import REVISIONS, content_digest
from powercontext.chain import Walk
from powercontext.sources import entry_hash, payload_commitment, payload_digest

# shared[...]: {(family, artifact_id): last revision} of the scope's revision chains.
CHAINS = "artifact.chains"
# shared[...]: {(target, target_key): digest} the scope's latest erasure of each row left.
ERASED = "redaction.latest"


def register() -> None:
    # The erasure log first: the records say what an erased source or revision holds now,
    # so the streams after it can tell a recorded erasure from an alteration.
    register_stream(
        Stream(
            "redaction.record",
            model="powercontext.RedactionRecord",
            order=("seq",),
            verifier="powercontext.archive.kernel.RedactionLog",
        )
    )
    register_stream(
        Stream(
            "artifact.revision",
            model="powercontext.ArtifactRevision",
            order=("family", "artifact_id", "revision"),
            verifier="powercontext.archive.kernel.RevisionChains",
        )
    )
    register_stream(
        Stream(
            "artifact.head",
            model="powercontext.ArtifactHead",
            order=("family", "artifact_id"),
            left_out={"searchable_text": "derived: rebuilt from the head revision by the family"},
            verifier="powercontext.archive.kernel.Heads",
        )
    )
    register_stream(
        Stream(
            "source.record",
            model="powercontext.SourceRecord",
            order=("position",),
            verifier="powercontext.archive.kernel.SourceJournal",
        )
    )
    register_left_out(
        "powercontext.VectorIndexState",
        "derived: which model the vector indexes were computed with; rebuilt on import",
    )


class RedactionLog:
    """Records 1..n, each chained to the one before and hashed over its fields
    (``powercontext.redaction_log.record_hash``); remembers what each erased row holds."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.erased: dict[tuple[str, str], str] = shared.setdefault(ERASED, {})
        self.scope_id = scope_id
        self.walk: Walk[str] = Walk()

    def row(self, values: Mapping[str, Any]) -> str | None:
        step = self.walk.step(
            self.scope_id, values["seq"], values["previous_hash"], values["record_hash"]
        )
        if not step.in_place:
            return f"record {values['seq']} where record {step.expected} belongs (a gap)"
        if not step.linked:
            return "previous_hash is not the hash of the record before it"
        recomputed = redaction_log.record_hash(
            previous_hash=values["previous_hash"],
            seq=values["seq"],
            target=values["target"],
            target_key=values["target_key"],
            action=values["action"],
            reason=values["reason"],
            kinds=values["kinds"],
            digest=values["digest"],
            created_at=values["created_at"],
        )
        if recomputed != values["record_hash"]:
            return "record_hash does not match its fields"
        self.erased[(values["target"], values["target_key"])] = values["digest"]
        return None

    def end(self) -> str | None:
        return None


class RevisionChains:
    """Each artifact's revisions are 1..n, each chained to the previous one's hash and
    hashed over its own content (``powercontext.artifacts.REVISIONS``), or, for a
    revision redacted since, holding exactly what its redaction record left."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.erased: dict[tuple[str, str], str] = shared.get(ERASED, {})
        self.chains: dict[tuple[str, str], int] = shared.setdefault(CHAINS, {})
        self.walk: Walk[tuple[str, str]] = Walk()

    def row(self, values: Mapping[str, Any]) -> str | None:
        key = (values["family"], values["artifact_id"])
        revision = values["revision"]
        step = self.walk.step(key, revision, values["previous_hash"], values["revision_hash"])
        if not step.in_place:
            return f"revision {revision} where revision {step.expected} belongs (a gap)"
        if not step.linked:
            return "previous_hash is not the hash of the revision before it"
        if REVISIONS.link(values["previous_hash"], values["content"]) != values["revision_hash"]:
            target_key = f"{values['family']}/{values['artifact_id']}@{revision}"
            left = self.erased.get((redaction_log.ARTIFACT_REVISION, target_key))
            if left is None or content_digest(values["content"]) != left:
                return "revision_hash does not match its content"
        self.chains[key] = revision
        return None

    def end(self) -> str | None:
        return None


class Heads:
    """Every chain has exactly one head, and it names the chain's last revision."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.chains: dict[tuple[str, str], int] = shared.get(CHAINS, {})
        self.seen: set[tuple[str, str]] = set()

    def row(self, values: Mapping[str, Any]) -> str | None:
        key = (values["family"], values["artifact_id"])
        last = self.chains.get(key)
        if last is None:
            return "a head of an artifact that has no revisions"
        if values["revision"] != last:
            return f"head names revision {values['revision']}, the chain ends at {last}"
        self.seen.add(key)
        return None

    def end(self) -> str | None:
        headless = sorted(self.chains.keys() - self.seen)
        if headless:
            family, artifact_id = headless[0]
            return f"{family}/{artifact_id} has revisions but no head"
        return None


class SourceJournal:
    """Positions run 1, 2, 3, ... without a gap, each entry linked to the one before and
    its ``entry_hash`` recomputed (``powercontext.sources.source_journal_check``); an
    intact entry's payload matches its commitment and ``payload_hash``, an erased one
    (no salt) holds exactly what its latest redaction record left (nothing: purged)."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.erased: dict[tuple[str, str], str] = shared.get(ERASED, {})
        self.scope_id = scope_id
        self.walk: Walk[str] = Walk()

    def row(self, values: Mapping[str, Any]) -> str | None:
        position = values["position"]
        step = self.walk.step(
            self.scope_id, position, values["previous_hash"], values["entry_hash"]
        )
        if not step.in_place:
            return f"position {position} where {step.expected} belongs (a gap)"
        if not step.linked:
            return "previous_hash is not the hash of the entry before it"
        recomputed = entry_hash(
            previous_hash=values["previous_hash"],
            source_type=values["source_type"],
            source_id=values["source_id"],
            position=position,
            commitment=values["commitment"],
        )
        if recomputed != values["entry_hash"]:
            return "entry_hash does not match the entry"
        payload, stored = values["payload"], values["payload_hash"]
        if values["salt"]:
            if payload_commitment(values["salt"], payload) != values["commitment"]:
                return "payload does not match its commitment"
            if payload_digest(payload) != stored:
                return "payload_hash does not match its payload"
            return None
        key = f"{values['source_type']}:{values['source_id']}#{position}"
        left = self.erased.get((redaction_log.SOURCE, key))
        if left is None:
            return "payload was erased without a redaction record"
        if left == "":
            return "purged, yet it holds a payload" if payload or stored else None
        if payload_digest(payload) != left or stored != left:
            return "payload differs from what its redaction left"
        return None

    def end(self) -> str | None:
        return None
