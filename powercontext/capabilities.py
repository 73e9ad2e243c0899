"""What this server can do, as ``GET /v1/capabilities`` reports it.

Families register themselves when their app is ready, so the answer is true to what is
installed rather than a hard-coded promise.
"""

from typing import Any

from powercontext.search import hybrid

CONTEXT_VERSION = "powercontext.prepared-context.v1"

# Registered by each family app when it is ready, in INSTALLED_APPS order.
_families: list[str] = []


def register_family(name: str) -> None:
    if name not in _families:
        _families.append(name)


def search_modes() -> list[str]:
    """``vector`` and ``hybrid`` only when this process can embed a query: the channel is
    on and its model is installed (whether an index's vectors are ready is
    ``/health/ready``'s answer, and ``auto`` falls back to fts until they are)."""
    if not hybrid.can_embed():
        return ["auto", "fts"]
    return ["auto", "fts", "vector", "hybrid"]


def capabilities() -> dict[str, Any]:
    return {
        "source_types": ["content"],
        "artifact_families": list(_families),
        "search_modes": search_modes(),
        "context_versions": [CONTEXT_VERSION],
        "memory_extraction": False,
        "experience_generation": False,
    }
