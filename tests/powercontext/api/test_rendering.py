"""Each rendering function answers exactly what its operation's output serializer (the
OpenAPI document's source) makes of the same typed value, every optional part filled and
empty, so the fast functions cannot drift from the documented shapes."""

import json

import pytest

from contextpack import rendering as contextpack_rendering
from contextpack.builder import PreparedContext
from contextpack.serializers import PreparedContextOutput
from experience import rendering as experience_rendering
from experience.serializers import ArtifactCandidateSchema, CandidateListOutput, ExperienceGetOutput
from experience.values import (
    ApprovedExperience,
    ArtifactCandidate,
    CandidatePage,
    Proposal,
    experience_ref,
)
from memory import rendering as memory_rendering
from memory.serializers import (
    MemoryChangesOutput,
    MemoryEntriesListOutput,
    MemoryEntrySchema,
    MemorySearchOutput,
    MemoryWriteOutput,
)
from memory.values import (
    Citation,
    MemoryChange,
    MemoryChanges,
    MemoryEntry,
    MemoryEntryPage,
    MemoryFound,
    MemoryRevision,
    MemorySearchResult,
    WriteResult,
    memory_ref,
)
from powercontext.refs import SourceRef

CITATION = Citation(3, "mem_ent_1", "mem_ver_1")
SOURCE = SourceRef("content", "prompt-1")
ENTRY = MemoryEntry(CITATION, 2, "note", "Run the tests.", "inactive", (SOURCE,), (memory_ref(1),))
BARE_ENTRY = MemoryEntry(CITATION, 1, "note", "t", "active", (), ())
PROPOSAL = Proposal("s", "a", "o", "l")
CANDIDATE = ArtifactCandidate(
    "cand_1", 2, "experience", "approved", PROPOSAL, (SOURCE,), (memory_ref(1),),
    experience_ref("exp_1", 1), "why", experience_ref("exp_1", 2), None,
)  # fmt: skip
PENDING = ArtifactCandidate(
    "cand_2", 1, "experience", "rejected", PROPOSAL, (), (), None, None, None, "dup"
)
READY = "x" * 10

CASES = [
    (memory_rendering.entry, MemoryEntrySchema, ENTRY),
    (memory_rendering.entry, MemoryEntrySchema, BARE_ENTRY),
    (memory_rendering.write_result, MemoryWriteOutput, WriteResult(memory_ref(3), ENTRY)),
    (memory_rendering.write_result, MemoryWriteOutput, WriteResult(memory_ref(3), None)),
    (
        memory_rendering.search_result,
        MemorySearchOutput,
        MemorySearchResult(memory_ref(3), "fts", [MemoryFound(CITATION, "t", 0.5, ("fts",))]),
    ),
    (memory_rendering.search_result, MemorySearchOutput, MemorySearchResult(None, None, [])),
    (
        memory_rendering.entry_page,
        MemoryEntriesListOutput,
        MemoryEntryPage(memory_ref(3), [ENTRY, BARE_ENTRY], "cursor"),
    ),
    (memory_rendering.entry_page, MemoryEntriesListOutput, MemoryEntryPage(None, [], None)),
    (
        memory_rendering.changes,
        MemoryChangesOutput,
        MemoryChanges(
            memory_ref(3),
            [
                MemoryRevision(
                    memory_ref(2),
                    [
                        MemoryChange("revise", "mem_ent_1", "mem_ver_0", "mem_ver_1", "why"),
                        MemoryChange("deactivate", "mem_ent_2", "mem_ver_2", None, None),
                    ],
                )
            ],
            2,
        ),
    ),
    (memory_rendering.changes, MemoryChangesOutput, MemoryChanges(None, [], None)),
    (experience_rendering.candidate, ArtifactCandidateSchema, CANDIDATE),
    (experience_rendering.candidate, ArtifactCandidateSchema, PENDING),
    (
        experience_rendering.candidate_page,
        CandidateListOutput,
        CandidatePage([CANDIDATE, PENDING], "next"),
    ),
    (
        experience_rendering.approved_experience,
        ExperienceGetOutput,
        ApprovedExperience(experience_ref("exp_1", 2), PROPOSAL, (SOURCE,), (memory_ref(1),)),
    ),
    (
        contextpack_rendering.prepared_context,
        PreparedContextOutput,
        PreparedContext("ready", READY, len(READY), items_included=1),
    ),
    (
        contextpack_rendering.prepared_context,
        PreparedContextOutput,
        PreparedContext("empty", None, 0),
    ),
]


@pytest.mark.parametrize(("render", "output", "value"), CASES)
def test_rendering_matches_the_output_serializer(render, output, value):
    # Compared as JSON text, so the key order (part of what clients see) is compared too.
    assert json.dumps(render(value)) == json.dumps(output(value).data)
