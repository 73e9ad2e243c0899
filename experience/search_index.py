"""What Experience indexes for search: the approved heads, the kernel's ``experience``
heads (only approval writes one, so pending and rejected candidates are never in it).

Kept by explicit writes: the approval service writes the head's row in its own
transaction (``experience.services``), and ``rebuild_index`` rewrites them from the
heads. Not by SQLite triggers on the kernel's table: Django rebuilds a SQLite table to
alter it, which silently drops triggers on it (migration ``experience.0002`` says more).
On OceanBase the FULLTEXT index is on the heads' column itself, named before this
declaration existed (``artifact_head_searchable_ft``).

Its vector channel embeds the head revision's four fields as written
(:func:`proposal_document`), not the analyzed tokens.
"""

import json
from collections.abc import Sequence

from django.db import connection

from experience.values import EXPERIENCE_FAMILY, PROPOSAL_FIELDS, Proposal
from powercontext import redaction
from powercontext.search import FamilyIndex, Kept


def proposal_document(proposal: Proposal) -> str:
    """What the vector channel embeds for an Experience: its four fields, in order."""
    return "\n".join(getattr(proposal, name) for name in PROPOSAL_FIELDS)


def approval_documents(scope_id: str, candidate_id: str, version: int) -> list[str]:
    """The document an approval of the candidate at ``version`` would index (read before
    the approval's transaction, to embed it there; none when there is no such version:
    the approval then fails on its own)."""
    from experience.models import CandidateVersion

    found = CandidateVersion.objects.filter(
        candidate__scope_id=scope_id, candidate_id=candidate_id, version=version
    ).first()
    if found is None:
        return []
    # As the approval will store it: redacted, if it was stored before redaction existed.
    fields = (found.situation, found.action, found.outcome, found.lesson)
    return [proposal_document(Proposal(*(redaction.redact(text).text for text in fields)))]


def experience_documents(row_keys: Sequence[int]) -> dict[int, str]:
    """{head row key: the document of the head's revision}.

    One plain statement, each head joined to its revision: every prepare reads its
    window's documents (``memory.search_index.memory_documents`` says why), and the ORM
    built a condition per head."""
    from powercontext.models import ArtifactHead, ArtifactRevision

    keys = list(row_keys)
    if not keys:
        return {}
    heads = connection.ops.quote_name(ArtifactHead._meta.db_table)
    revisions = connection.ops.quote_name(ArtifactRevision._meta.db_table)
    marks = ", ".join(["%s"] * len(keys))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT h.id, r.content FROM {heads} h JOIN {revisions} r "  # noqa: S608 - names and placeholders only
            "ON r.scope_id = h.scope_id AND r.family = h.family "
            "AND r.artifact_id = h.artifact_id AND r.revision = h.revision "
            f"WHERE h.family = %s AND h.id IN ({marks})",
            [EXPERIENCE_FAMILY, *keys],
        )
        found = cursor.fetchall()
    documents = {}
    for key, text in found:
        try:
            proposal = Proposal.from_payload(json.loads(text))
        except (ValueError, KeyError, TypeError):
            continue  # not a proposal: check_integrity reports the revision
        documents[int(key)] = proposal_document(proposal)
    return documents


EXPERIENCE_INDEX = FamilyIndex(
    name="experience_head",
    table="powercontext_artifacthead",
    cited_id="artifact_id",
    version="revision",
    filters=(("family", EXPERIENCE_FAMILY),),
    kept=Kept.BY_WRITES,
    object_names=(("oceanbase", "artifact_head_searchable_ft"),),
    documents=experience_documents,
    term_counts="experience.ExperienceTermStat",
)
