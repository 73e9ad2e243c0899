"""Example payloads for the OpenAPI document (Swagger UI shows them): one story, told
in the order a new scope lives it, with ids of the shapes the server mints.

The family modules (``memory.openapi_examples``, ``experience.openapi_examples``,
``contextpack.openapi_examples``) hold their operations' examples; this one holds the
shared ids, the system operations' examples and the error examples. Every example is
checked by ``tests/powercontext/api/test_openapi_examples.py``: it validates against its
schema, and the story is replayed against the API (ids mapped to the ones the server
mints), so an example that stops being true fails the suite.
"""

from drf_spectacular.utils import OpenApiExample

from powercontext.refs import ArtifactRef

SCOPE = "git:example.com/acme/widgets"
SOURCE_ID = "prompt-42"
# Ids as the server mints them (a prefix and 32 hex digits of a UUID4).
ENTRY_ID = "mem_ent_6f853a2cf8a843108793b8da031e2e95"
ENTRY_VERSION_1 = "mem_ver_d6753d61ddc3403c8fd191bd48f41600"
ENTRY_VERSION_2 = "mem_ver_5424301fd2d046d1bdcf8cc064cae142"
CANDIDATE_ID = "cand_abeff39122ad46a0b0f657f3bd870f96"
OTHER_CANDIDATE_ID = "cand_efb56a6a020b490faffa586b082bf896"
EXPERIENCE_ID = "exp_699464b1087447c1b1ba0e66eb40b5ba"
# The pattern each kind of id matches (the replay test checks real answers by them).
ID_PATTERNS = {
    "mem_ent_": r"^mem_ent_[0-9a-f]{32}$",
    "mem_ver_": r"^mem_ver_[0-9a-f]{32}$",
    "cand_": r"^cand_[0-9a-f]{32}$",
    "exp_": r"^exp_[0-9a-f]{32}$",
}


def request(name: str, value: dict, description: str = "") -> OpenApiExample:
    return OpenApiExample(name, value=value, request_only=True, description=description)


def response(name: str, value: dict, description: str = "") -> OpenApiExample:
    return OpenApiExample(name, value=value, response_only=True, description=description)


def error(name: str, code: str, message: str, details=None, description="") -> OpenApiExample:
    """An error answer (``powercontext.api.errors.error_body``)."""
    body = {"error": {"code": code, "message": message, "details": details}}
    return response(name, body, description)


def memory_ref(revision: int) -> dict:
    return ArtifactRef("memory", "memory", revision).as_payload()


def experience_ref(revision: int = 1) -> dict:
    return ArtifactRef("experience", EXPERIENCE_ID, revision).as_payload()


def citation(revision: int, entry_version_id: str) -> dict:
    return {
        "memory_ref": memory_ref(revision),
        "entry_id": ENTRY_ID,
        "entry_version_id": entry_version_id,
    }


# Errors every operation shares.
UNAUTHORIZED = error(
    "No or wrong token",
    "unauthorized",
    "A valid bearer token is required.",
    description="Send `Authorization: Bearer <token>`: the agent token "
    "(`POWERCONTEXT_API_TOKEN`) or a person's personal token.",
)
AGENT_ONLY = error(
    "Personal token",
    "permission_denied",
    "A personal token may read (and decide candidates) but not write Memory, "
    "propose or capture: that needs the agent token.",
    description="Writes are the agent's: a reviewer's personal token may read and decide, "
    "not write.",
)
REVIEWER_ONLY = error(
    "The agent token",
    "permission_denied",
    "Deciding a candidate needs a reviewer's personal token.",
    description="Approve, reject and revise are human acts: only a user with the review "
    "permission, by their personal token, may decide. Checked before the body.",
)


def invalid(name: str, *errors: tuple[str, str], description: str = "") -> OpenApiExample:
    """A 422 ``invalid_request`` naming each bad field by its dotted path."""
    return error(
        name,
        "invalid_request",
        "The request is invalid.",
        {"errors": [{"field": field, "message": message} for field, message in errors]},
        description,
    )


HEALTH_LIVE = response(
    "Live", {"status": "live", "checks": {}}, "The process answers; nothing else is checked."
)
HEALTH_READY = response(
    "Ready",
    {
        "status": "ready",
        "checks": {
            "database": {"status": "ok"},
            "migrations": {"status": "ok"},
            "fulltext_index": {"status": "ok"},
            "storage": {"status": "ok"},
            "vector_index": {
                "status": "ok",
                "detail": "experience_head: no vector index yet (the first write creates "
                "it, or manage.py rebuild_index); memory_activeentry: no vector index yet (the "
                "first write creates it, or manage.py rebuild_index) (search answers "
                "lexically meanwhile)",
            },
        },
    },
    "Every check passed: send traffic. ``vector_index`` never fails readiness (search "
    "answers lexically without vectors); its detail says which vector index is not ready "
    "and why (switched off, no vectors yet, model changed: run ``manage.py rebuild_index``).",
)
HEALTH_NOT_READY = response(
    "Not ready",
    {
        "status": "not_ready",
        "checks": {
            "database": {"status": "ok"},
            "migrations": {"status": "failing", "detail": "2 migration(s) pending"},
            "fulltext_index": {"status": "ok"},
            "storage": {"status": "ok"},
            "vector_index": {"status": "ok", "detail": "ready"},
        },
    },
    "A failing check says which and why; run `manage.py migrate` here.",
)
CAPABILITIES = response(
    "This server",
    {
        "source_types": ["content"],
        "artifact_families": ["memory", "experience"],
        "search_modes": ["auto", "fts", "vector", "hybrid"],
        "context_versions": ["powercontext.prepared-context.v1"],
        "memory_extraction": False,
        "experience_generation": False,
    },
    "Full-text search only: `vector` and `hybrid` are not offered.",
)
CAPTURE_REQUEST = request(
    "A prompt",
    {
        "scope_id": SCOPE,
        "source_id": SOURCE_ID,
        "content": "The nightly import broke after the schema change: why?",
        "metadata": {"agent": "codex", "session": "s-7"},
    },
    "The agent's prompt, captured so that a proposal can cite it as evidence.",
)
CAPTURE_RESPONSE = response(
    "Accepted",
    {
        "status": "accepted",
        "source": {"name": "content", "source_id": SOURCE_ID},
        "position": 1,
    },
    "`position` is the source's place in the scope's capture order; sending the same id and "
    "payload again answers the same position. A prompt holding a key would have answered "
    "with the header `PowerContext-Redacted: 1; kinds=aws-secret-key`, the key stored as "
    "`[redacted:aws-secret-key]`.",
)
SOURCE_CONFLICT = error(
    "Same id, other payload",
    "source_conflict",
    "A different payload was already captured under this source id.",
    description="A source id names one payload forever: use a new id for new content.",
)
