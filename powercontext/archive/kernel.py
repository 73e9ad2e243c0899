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
from powercontext.artifacts import GENESIS_HASH, chain_hash, content_digest
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
        self.expected = 1
        self.previous = GENESIS_HASH

    def row(self, values: Mapping[str, Any]) -> str | None:
        if values["seq"] != self.expected:
            return f"record {values['seq']} where record {self.expected} belongs (a gap)"
        if values["previous_hash"] != self.previous:
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
        self.expected, self.previous = values["seq"] + 1, values["record_hash"]
        return None

    def end(self) -> str | None:
        return None


class RevisionChains:
    """Each artifact's revisions are 1..n, each chained to the previous one's hash and
    hashed over its own content (``powercontext.artifacts.chain_hash``), or, for a
    revision redacted since, holding exactly what its redaction record left."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.erased: dict[tuple[str, str], str] = shared.get(ERASED, {})
        self.chains: dict[tuple[str, str], int] = shared.setdefault(CHAINS, {})
        self.current: tuple[str, str] | None = None
        self.expected = 1
        self.previous = GENESIS_HASH

    def row(self, values: Mapping[str, Any]) -> str | None:
        key = (values["family"], values["artifact_id"])
        if key != self.current:
            self.current, self.expected, self.previous = key, 1, GENESIS_HASH
        revision = values["revision"]
        if revision != self.expected:
            return f"revision {revision} where revision {self.expected} belongs (a gap)"
        if values["previous_hash"] != self.previous:
            return "previous_hash is not the hash of the revision before it"
        if chain_hash(values["previous_hash"], values["content"]) != values["revision_hash"]:
            target_key = f"{values['family']}/{values['artifact_id']}@{revision}"
            left = self.erased.get((redaction_log.ARTIFACT_REVISION, target_key))
            if left is None or content_digest(values["content"]) != left:
                return "revision_hash does not match its content"
        self.chains[key] = revision
        self.expected, self.previous = revision + 1, values["revision_hash"]
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
        self.expected = 1
        self.previous = GENESIS_HASH

    def row(self, values: Mapping[str, Any]) -> str | None:
        position = values["position"]
        if position != self.expected:
            return f"position {position} where {self.expected} belongs (a gap)"
        if values["previous_hash"] != self.previous:
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
        self.expected, self.previous = position + 1, values["entry_hash"]
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
