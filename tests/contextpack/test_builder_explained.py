"""``PreparedContextBuilder.build_explained``: the same pack as ``build``, and a decision
for every hit given, each reason checked against a situation that has exactly that cause."""

import json

from hypothesis import given

from contextpack import builder
from contextpack.builder import (
    ITEM_SOURCE_CAP_BYTES,
    ArtifactRef,
    ExperienceHit,
    MemoryCitation,
    MemoryHit,
    PreparedContextBuilder,
)
from tests.contextpack.test_builder_properties import HEAD as GENERATED_HEAD
from tests.contextpack.test_builder_properties import (
    PROPERTY_SETTINGS,
    budgets,
    experience_hits,
    memory_hits,
)

HEAD = ArtifactRef("memory", "memory", 7)
BEGIN = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n"


def mem(entry, text="A note about the importer.", version=None):
    return MemoryHit(MemoryCitation(HEAD, entry, version or f"{entry}_v1"), text)


def exp(artifact_id, lesson="Retry the importer with backoff.", revision=1):
    return ExperienceHit(
        ArtifactRef("experience", artifact_id, revision),
        "The importer flaked.",
        "Added backoff.",
        "It passed.",
        lesson,
    )


def explained(memory=(), experience=(), max_bytes=8000, head=HEAD):
    return PreparedContextBuilder().build_explained(
        head=head, memory_hits=list(memory), experience_hits=list(experience), max_bytes=max_bytes
    )


def outcomes(trace):
    return [(d.family, d.rank, d.outcome) for d in trace.decisions]


def items(prepared):
    return json.loads(prepared.content.split(BEGIN, 1)[1].rsplit("\n", 1)[0])["items"]


@PROPERTY_SETTINGS
@given(memory_hits, experience_hits, budgets)
def test_explained_build_is_the_build_and_accounts_for_every_hit(memory, experience, max_bytes):
    prepared, trace = explained(memory, experience, max_bytes, head=GENERATED_HEAD)
    plain = PreparedContextBuilder().build(
        head=GENERATED_HEAD, memory_hits=memory, experience_hits=experience, max_bytes=max_bytes
    )
    assert prepared == plain
    assert [(d.family, d.rank) for d in trace.decisions] == [
        *(("memory", rank) for rank in range(1, len(memory) + 1)),
        *(("experience", rank) for rank in range(1, len(experience) + 1)),
    ]
    included = sorted(
        (d for d in trace.decisions if d.outcome == builder.INCLUDED), key=lambda d: d.position
    )
    assert [d.position for d in included] == list(range(1, prepared.items_included + 1))
    assert sum(d.cut is not None for d in included) == prepared.items_truncated
    assert (
        sum(d.outcome == builder.OVER_BUDGET for d in trace.decisions)
        == prepared.items_skipped_for_budget
    )
    if prepared.status == "ready":
        rendered = items(prepared)
        for decision, item in zip(included, rendered, strict=True):
            assert item["truncated"] == (decision.cut is not None)
            source = (memory if decision.family == "memory" else experience)[decision.rank - 1]
            if decision.family == "memory":
                assert item["citation"]["entry_id"] == source.citation.entry_id
            else:
                assert item["citation"]["artifact_ref"]["artifact_id"] == (
                    source.artifact_ref.artifact_id
                )


def test_unusable_and_duplicate_hits_name_the_hit_they_repeat():
    _, trace = explained([mem("a"), mem("b", text="  "), mem("a"), mem("c")], [exp("x"), exp("x")])
    assert outcomes(trace) == [
        ("memory", 1, builder.INCLUDED),
        ("memory", 2, builder.UNUSABLE),
        ("memory", 3, builder.DUPLICATE),
        ("memory", 4, builder.INCLUDED),
        ("experience", 1, builder.INCLUDED),
        ("experience", 2, builder.DUPLICATE),
    ]
    assert trace.decisions[2].duplicate_of == 1
    assert trace.decisions[5].duplicate_of == 1
    # Another version of the same entry is not a duplicate.
    _, trace = explained([mem("a"), mem("a", version="a_v2")])
    assert outcomes(trace) == [("memory", 1, builder.INCLUDED), ("memory", 2, builder.INCLUDED)]


def test_family_limit_then_window_then_item_limit():
    memory = [mem(f"m{rank:02d}") for rank in range(1, 21)]
    experience = [exp(f"e{rank}") for rank in range(1, 11)]
    prepared, trace = explained(memory, experience)
    by_rank = {(d.family, d.rank): d for d in trace.decisions}
    # Interleaved M1 E1 M2 E2 M3..M6: eight items; M7 and M8 were selected but came too late.
    assert [by_rank["memory", r].outcome for r in range(1, 7)] == [builder.INCLUDED] * 6
    assert [by_rank["memory", r].outcome for r in (7, 8)] == [builder.ITEM_LIMIT] * 2
    assert [by_rank["memory", r].outcome for r in range(9, 17)] == [builder.FAMILY_LIMIT] * 8
    assert [by_rank["memory", r].outcome for r in range(17, 21)] == [builder.OUTSIDE_WINDOW] * 4
    assert [by_rank["experience", r].outcome for r in (1, 2)] == [builder.INCLUDED] * 2
    assert [by_rank["experience", r].outcome for r in range(3, 9)] == [builder.FAMILY_LIMIT] * 6
    assert [by_rank["experience", r].outcome for r in (9, 10)] == [builder.OUTSIDE_WINDOW] * 2
    assert [by_rank["memory", 2].position, by_rank["experience", 2].position] == [3, 4]
    assert prepared.items_included == 8


def test_cut_at_the_item_cap_cut_to_fit_and_over_budget():
    long = "x" * (ITEM_SOURCE_CAP_BYTES + 500)
    _, trace = explained([mem("a", text=long)])
    [decision] = trace.decisions
    assert (decision.outcome, decision.cut) == (builder.INCLUDED, builder.CUT_AT_CAP)
    assert decision.source_bytes == ITEM_SOURCE_CAP_BYTES + 500

    # 900 bytes: the first long entry is cut to the bytes left; the next finds none left.
    prepared, trace = explained([mem("a", text=long), mem("b", text="y" * 300)], max_bytes=900)
    first, second = trace.decisions
    assert (first.outcome, first.cut) == (builder.INCLUDED, builder.CUT_TO_FIT)
    assert first.item_bytes <= first.budget_bytes
    assert (second.outcome, second.source_bytes) == (builder.OVER_BUDGET, 300)
    assert second.budget_bytes == 900 - prepared.content_bytes - 1
    assert prepared.items_skipped_for_budget == 1


def test_a_short_item_that_fits_whole_is_not_cut():
    _, trace = explained([mem("a", text="Short and whole.")])
    [decision] = trace.decisions
    assert (decision.outcome, decision.cut, decision.position) == (builder.INCLUDED, None, 1)
