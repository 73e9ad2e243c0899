"""The hash chain primitive (``powercontext.chain``) and the three journals built on it.

The hashes below were computed by the code each journal had before the primitive
existed (``artifacts.chain_hash``, ``sources.entry_hash``, ``redaction_log.record_hash``
written out by hand): stored rows and archives hold hashes of exactly these bytes, so
the chains written then must verify now, by ``check_integrity`` and by an import.
"""

from datetime import UTC, datetime

import pytest

from powercontext.archive import kernel
from powercontext.artifacts import REVISIONS
from powercontext.chain import GENESIS_HASH, Chain, Step, Walk, canonical_json, next_link
from powercontext.maintenance import artifact_chain_check
from powercontext.models import ArtifactHead, ArtifactRevision, RedactionRecord, SourceRecord
from powercontext.redaction_log import record_hash, redaction_chain_check
from powercontext.sources import (
    entry_hash,
    payload_commitment,
    payload_digest,
    source_journal_check,
)

SCOPE = "chain-written-before"

# (content, revision_hash) of three revisions of one artifact, as written before.
REVISIONS_BEFORE = [
    (
        '{"n":1,"text":"first"}',
        "a9f338a478832355a29e48f396297656fc5cb5913e0c15d76123f6c61919877d",
    ),
    (
        '{"n":2,"text":"second \u2028 数据"}',
        "a14f878573f527aa0bd21d0fb8aaac398b4cf05e5c374ca2f166717198e7e544",
    ),
    (
        '{"n":3,"text":"third\\u0000"}',
        "5e9a96d70fb88fd09ddbb8b4d542240b238f40e78fd06685037f19ba30d8ae44",
    ),
]
# (salt, payload, commitment, entry_hash) of two captured sources, as written before.
SOURCES_BEFORE = [
    (
        "11" * 32,
        canonical_json({"content": "a prompt", "metadata": {}}),
        "9eed55d9fff9eadd49c915255ba078a196676731e3edac7c25b2554414bb5268",
        "8c55a6daabe74bed7f39c8fd14c5f0f5e3fa497b65629853e197287ccb570aa5",
    ),
    (
        "22" * 32,
        canonical_json({"content": "another 🚀", "metadata": {"agent": "codex"}}),
        "c1eef9488127cdcde4987f1bfc46c7c62f49a01ade245ca4e2e9f8cbd316b706",
        "43dd712f8537ace50149c02a3317c88e9fda90eaf4fb229015fc3652abcff39d",
    ),
]
# record_hash of two redaction records (fields: :func:`_record_fields`), as written before.
RECORDS_BEFORE = [
    "b2c85409575730f6364bc6d1df3a8eb9858b5e8c5baa4e892ac2e68e1891f020",
    "0927f9daf157c9223faed52ff4123769df4958922d8f6b132a058d62a46038dd",
]


def _record_fields(seq: int) -> dict:
    return {
        "seq": seq,
        "target": "memory.version",
        "target_key": f"e{seq}@1",
        "action": "redact",
        "reason": "test",
        "kinds": canonical_json({"aws": seq}),
        "digest": "ab" * 32,
        "created_at": datetime(2026, 1, 2, 3, 4, 5, 123456 + seq, tzinfo=UTC),
    }


def _linked(hashes: list[str]) -> list[str]:
    """The previous_hash of each link of a chain whose own hashes are ``hashes``."""
    return [GENESIS_HASH, *hashes[:-1]]


def test_the_hashes_written_before_recompute() -> None:
    revision_hashes = [own for _, own in REVISIONS_BEFORE]
    for (content, own), previous in zip(REVISIONS_BEFORE, _linked(revision_hashes), strict=True):
        assert REVISIONS.link(previous, content) == own
    entry_hashes = [own for *_, own in SOURCES_BEFORE]
    for position, ((salt, payload, commitment, own), previous) in enumerate(
        zip(SOURCES_BEFORE, _linked(entry_hashes), strict=True), 1
    ):
        assert payload_commitment(salt, payload) == commitment
        recomputed = entry_hash(
            previous_hash=previous,
            source_type="content",
            source_id=f"s{position}",
            position=position,
            commitment=commitment,
        )
        assert recomputed == own
    for seq, (own, previous) in enumerate(
        zip(RECORDS_BEFORE, _linked(RECORDS_BEFORE), strict=True), 1
    ):
        assert record_hash(previous_hash=previous, **_record_fields(seq)) == own


def _write_chains_as_before() -> None:
    for revision, ((content, own), previous) in enumerate(
        zip(REVISIONS_BEFORE, _linked([own for _, own in REVISIONS_BEFORE]), strict=True), 1
    ):
        ArtifactRevision.objects.create(
            scope_id=SCOPE,
            family="notes",
            artifact_id="a1",
            revision=revision,
            content=content,
            previous_hash=previous,
            revision_hash=own,
        )
    ArtifactHead.objects.create(
        scope_id=SCOPE, family="notes", artifact_id="a1", revision=len(REVISIONS_BEFORE)
    )
    entry_hashes = [own for *_, own in SOURCES_BEFORE]
    for position, ((salt, payload, commitment, own), previous) in enumerate(
        zip(SOURCES_BEFORE, _linked(entry_hashes), strict=True), 1
    ):
        SourceRecord.objects.create(
            scope_id=SCOPE,
            source_type="content",
            source_id=f"s{position}",
            position=position,
            payload=payload,
            payload_hash=payload_digest(payload),
            salt=salt,
            commitment=commitment,
            previous_hash=previous,
            entry_hash=own,
        )
    for seq, (own, previous) in enumerate(
        zip(RECORDS_BEFORE, _linked(RECORDS_BEFORE), strict=True), 1
    ):
        RedactionRecord.objects.create(
            scope_id=SCOPE, previous_hash=previous, record_hash=own, **_record_fields(seq)
        )


@pytest.mark.django_db
def test_chains_written_before_pass_check_integrity() -> None:
    _write_chains_as_before()
    results = [
        artifact_chain_check(scope_id=SCOPE),
        source_journal_check(scope_id=SCOPE),
        redaction_chain_check(scope_id=SCOPE),
    ]
    assert [(result.checked, result.findings) for result in results] == [(3, []), (2, []), (2, [])]


@pytest.mark.django_db
def test_chains_written_before_pass_an_imports_verifiers() -> None:
    _write_chains_as_before()
    shared: dict = {}
    for verifier, model, order in (
        (kernel.RedactionLog, RedactionRecord, "seq"),
        (kernel.RevisionChains, ArtifactRevision, "revision"),
        (kernel.Heads, ArtifactHead, "artifact_id"),
        (kernel.SourceJournal, SourceRecord, "position"),
    ):
        check = verifier(SCOPE, shared)
        for values in model.objects.filter(scope_id=SCOPE).order_by(order).values():
            assert check.row(values) is None, (verifier.__name__, values)
        assert check.end() is None


@pytest.mark.django_db
def test_a_chain_altered_after_is_still_caught() -> None:
    _write_chains_as_before()
    ArtifactRevision.objects.filter(scope_id=SCOPE, revision=2).update(content='{"n":2}')
    SourceRecord.objects.filter(scope_id=SCOPE, position=2).update(previous_hash="f" * 64)
    RedactionRecord.objects.filter(scope_id=SCOPE, seq=1).delete()
    assert [str(f) for f in artifact_chain_check(scope_id=SCOPE).findings] == [
        f"artifact.chain: [{SCOPE}] notes/a1@2: revision_hash does not match its content"
    ]
    assert [str(f) for f in source_journal_check(scope_id=SCOPE).findings] == [
        f"source.journal: [{SCOPE}] position 2 (content:s2): previous_hash does not match "
        "the prior entry's hash",
        f"source.journal: [{SCOPE}] position 2 (content:s2): entry_hash does not match the entry",
    ]
    messages = [f.message for f in redaction_chain_check(scope_id=SCOPE).findings]
    assert messages == [
        "expected record 1 here (gap)",
        "previous_hash does not match the prior record",
    ]


def test_the_walk_expects_each_place_and_link_per_key() -> None:
    walk: Walk[str] = Walk()
    chain = Chain(b"test\x00")
    first = chain.link(GENESIS_HASH, "x")
    second = chain.link(first, "y")
    assert walk.step("a", 1, GENESIS_HASH, first) == Step(1, in_place=True, linked=True, first=True)
    # A gap: place 2 expected; the link itself is right.
    assert walk.step("a", 3, first, second) == Step(2, in_place=False, linked=True, first=False)
    # The next place follows the link read, whatever was wrong with it.
    assert walk.step("a", 4, GENESIS_HASH, "z") == Step(4, in_place=True, linked=False, first=False)
    assert (walk.key, walk.last) == ("a", 4)
    # A new key starts a chain of its own: place 1, the genesis hash.
    assert walk.step("b", 1, GENESIS_HASH, first) == Step(1, in_place=True, linked=True, first=True)
    assert next_link(None) == (1, GENESIS_HASH)
    assert next_link((4, second)) == (5, second)
