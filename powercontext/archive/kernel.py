"""The kernel's streams: Artifact revisions with their hash chains, Artifact heads and
captured sources with their journal positions; and the models it leaves out.

Registered by ``PowerContextConfig.ready()`` before any family's streams (the kernel's
app is first in INSTALLED_APPS), so revisions are read and written before the family
rows that describe them.
"""

from collections.abc import Mapping
from typing import Any

from powercontext.archive.streams import Stream, register_left_out, register_stream
from powercontext.artifacts import GENESIS_HASH, chain_hash
from powercontext.sources import payload_digest

# shared[...]: {(family, artifact_id): last revision} of the scope's revision chains.
CHAINS = "artifact.chains"


def register() -> None:
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


class RevisionChains:
    """Each artifact's revisions are 1..n, each chained to the previous one's hash and
    hashed over its own content (``powercontext.artifacts.chain_hash``)."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
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
    """Positions run 1, 2, 3, ... without a gap, and each payload_hash recomputes."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.expected = 1

    def row(self, values: Mapping[str, Any]) -> str | None:
        if values["position"] != self.expected:
            return f"position {values['position']} where {self.expected} belongs (a gap)"
        self.expected += 1
        if payload_digest(values["payload"]) != values["payload_hash"]:
            return "payload_hash does not match its payload"
        return None

    def end(self) -> str | None:
        return None
