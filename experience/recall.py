"""Approved Experience as the Context Pack's second source (RFC 0028 amendment).

``ExperienceConfig.ready`` registers :func:`experience_pack_hits` with
``contextpack.application``, which calls it inside its read snapshot.
"""

from collections.abc import Collection

from contextpack.builder import ArtifactRef, ExperienceHit
from experience.selectors import experience_search_at


def experience_pack_hits(
    *, scope_id: str, query: str, limit: int, recurring: Collection[str] = frozenset()
) -> list[ExperienceHit]:
    """The builder's Experience hits: approved heads only, best first, each citing its
    exact approved revision with its four fields."""
    return [
        ExperienceHit(
            artifact_ref=ArtifactRef(hit.family, hit.artifact_id, hit.revision),
            situation=hit.situation,
            action=hit.action,
            outcome=hit.outcome,
            lesson=hit.lesson,
        )
        for hit in experience_search_at(
            scope_id=scope_id, query=query, limit=limit, recurring=recurring
        )
    ]
