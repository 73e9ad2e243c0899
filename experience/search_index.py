"""What Experience indexes for search: the approved heads, the kernel's ``experience``
heads (only approval writes one, so pending and rejected candidates are never in it).

Kept by explicit writes: the approval service writes the head's row in its own
transaction (``experience.services``), and ``rebuild_index`` rewrites them from the
heads. Not by SQLite triggers on the kernel's table: Django rebuilds a SQLite table to
alter it, which silently drops triggers on it (migration ``experience.0002`` says more).
On OceanBase the FULLTEXT index is on the heads' column itself, named before this
declaration existed (``artifact_head_searchable_ft``).
"""

from experience.values import EXPERIENCE_FAMILY
from powercontext.search.indexes import Kept, SearchIndex

EXPERIENCE_INDEX = SearchIndex(
    name="experience_head",
    table="powercontext_artifacthead",
    cited_id="artifact_id",
    version="revision",
    filters=(("family", EXPERIENCE_FAMILY),),
    kept=Kept.BY_WRITES,
    object_names=(("oceanbase", "artifact_head_searchable_ft"),),
)
