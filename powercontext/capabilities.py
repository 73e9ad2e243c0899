"""What this server can do, as ``GET /v1/capabilities`` reports it.

Families register themselves when their app is ready, so the answer is true to what is
installed rather than a hard-coded promise.
"""

from typing import Any

CONTEXT_VERSION = "powercontext.prepared-context.v1"

# Registered by each family app when it is ready, in INSTALLED_APPS order.
_families: list[str] = []


def register_family(name: str) -> None:
    if name not in _families:
        _families.append(name)


def capabilities() -> dict[str, Any]:
    return {
        "source_types": ["content"],
        "artifact_families": list(_families),
        "search_modes": ["auto", "fts"],
        "context_versions": [CONTEXT_VERSION],
        "memory_extraction": False,
        "experience_generation": False,
    }
