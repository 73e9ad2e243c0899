"""Experience's MCP tools: get an approved Experience and propose one, each its HTTP
operation run through ``powercontext.api.mcp.run`` (the view's role, serializer, call and
rendering). Deciding a candidate (approve, reject, revise) is a human act and is not a
tool."""

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult

from experience.api import ExperienceGetView, ExperienceProposeView
from powercontext.api.mcp import READ, run, tool, write
from powercontext.api.mcp_arguments import ARTIFACT_REF, SOURCE_REF, ArtifactRef, ScopeId, argument

# -- the arguments (the limits of experience/serializers.py) ----------------------------

_PROPOSAL_FIELD = {"type": "string", "minLength": 1, "maxLength": 8000}
Proposal = argument(
    {
        "type": "object",
        "description": "The lesson learned; each field 1..8000 characters, not blank.",
        "properties": dict.fromkeys(("situation", "action", "outcome", "lesson"), _PROPOSAL_FIELD),
        "required": ["situation", "action", "outcome", "lesson"],
        "additionalProperties": False,
    }
)
SourceRefs = argument(
    {
        "type": "array",
        "items": SOURCE_REF,
        "maxItems": 32,
        "default": [],
        "description": "Evidence: captured sources. A proposal needs at least one source or "
        "artifact reference.",
    }
)
ArtifactRefs = argument(
    {
        "type": "array",
        "items": ARTIFACT_REF,
        "maxItems": 32,
        "default": [],
        "description": "Evidence: artifact revisions (e.g. a Memory citation's memory_ref).",
    }
)
Target = argument(
    {
        "anyOf": [ARTIFACT_REF, {"type": "null"}],
        "description": "The current revision of the Experience this proposal would revise.",
    }
)
ExperienceReason = argument(
    {
        "type": ["string", "null"],
        "maxLength": 2000,
        "description": "Why this lesson is worth keeping (optional, at most 2000 characters).",
    }
)

# -- the tools ------------------------------------------------------------------------


def get_experience(
    ctx: Context, scope_id: ScopeId = None, artifact: ArtifactRef = None
) -> CallToolResult:
    """An approved Experience revision (situation, action, outcome, lesson) and its
    evidence, exactly as cited."""
    return run(ExperienceGetView, ctx, {"scope_id": scope_id, "artifact": artifact})


def propose_experience(
    ctx: Context,
    scope_id: ScopeId = None,
    proposal: Proposal = None,
    source_refs: SourceRefs = None,
    artifact_refs: ArtifactRefs = None,
    target: Target = None,
    reason: ExperienceReason = None,
) -> CallToolResult:
    """Propose a lesson learned for human review. It becomes a pending candidate; nothing
    is recalled until a reviewer approves it. Needs at least one source or artifact
    reference as evidence: a source must have been captured in this scope, an artifact
    revision must exist. `target` names the current revision of an Experience to
    revise."""
    return run(
        ExperienceProposeView,
        ctx,
        {
            "scope_id": scope_id,
            "proposal": proposal,
            "source_refs": source_refs,
            "artifact_refs": artifact_refs,
            "target": target,
            "reason": reason,
        },
    )


def tools() -> list[Tool]:
    """Experience's tools, in the order they are listed."""
    return [
        tool(get_experience, ExperienceGetView, "Get an Experience", READ),
        tool(
            propose_experience,
            ExperienceProposeView,
            "Propose an Experience",
            write(destructive=False, idempotent=False),
        ),
    ]
