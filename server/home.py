"""The home page at ``/``: what this server is, whether it is ready, which agents have been
using it lately, and the exact commands that connect Codex and Claude Code to it.

Anonymous visitors see counts only. The agents seen are counted from the prompts their
hooks captured (the source journal's ``metadata.agent``): no scope id, prompt or memory
leaves this view unless a staff user is logged in, and then only scope ids with counts.
"""

import json
from collections import Counter
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.shortcuts import render
from django.utils import timezone

from powercontext.selectors import sources_recent
from powercontext.sources import CONTENT_SOURCE
from server.addresses import is_loopback
from server.health import readiness

WINDOW = timedelta(hours=1)
# The newest captures read at most: the page stays cheap however long the journal grows
# (newest first by primary key; past this many in an hour the counts say "at least").
SCAN_LIMIT = 2000
AGENT_NAMES = {"codex": "Codex", "claude": "Claude Code"}


def recent_agents(now=None) -> dict:
    """Counts of the last hour's captured prompts: per agent kind, distinct sessions and
    projects, and (for staff only, by the caller) per scope."""
    since = (now or timezone.now()) - WINDOW
    rows = sources_recent(name=CONTENT_SOURCE, limit=SCAN_LIMIT)
    agents: Counter = Counter()
    scopes: Counter = Counter()
    sessions = set()
    for row in rows:
        if row.captured_at < since:
            continue
        try:
            metadata = json.loads(row.payload_json).get("metadata") or {}
        except (ValueError, AttributeError):
            metadata = {}
        agent = metadata.get("agent") if isinstance(metadata, dict) else None
        agents[agent if agent in AGENT_NAMES else "other"] += 1
        scopes[row.scope_id] += 1
        session = metadata.get("session_id") if isinstance(metadata, dict) else None
        if isinstance(session, str):
            sessions.add((agent, session))
    return {
        "prompts": sum(agents.values()),
        "truncated": len(rows) == SCAN_LIMIT and rows[-1].captured_at >= since,
        "agents": [
            {"name": AGENT_NAMES.get(kind, "another client"), "prompts": count}
            for kind, count in sorted(agents.items(), key=lambda item: (-item[1], item[0]))
        ],
        "sessions": len(sessions),
        "projects": len(scopes),
        "scopes": scopes.most_common(20),
    }


def home(request):
    try:
        ready = readiness()
    except DatabaseError:
        ready = {"status": "not_ready", "checks": {}}
    try:
        recent = recent_agents()
    except DatabaseError:
        recent = None
    base = request.build_absolute_uri("/").rstrip("/")
    host = request.get_host().rsplit(":", 1)[0].strip("[]")
    local = is_loopback(host) and is_loopback(request.META.get("REMOTE_ADDR", ""))
    staff = request.user.is_authenticated and request.user.is_staff
    if not staff and recent is not None:
        recent = {key: value for key, value in recent.items() if key != "scopes"}
    context = {
        "base": base,
        "ready": ready,
        "recent": recent,
        "staff": staff,
        "token_required": settings.POWERCONTEXT_API_TOKEN is not None,
        # The checkout's path only for a visitor on this machine, where it is the path to
        # type; others get a placeholder (a path says nothing useful across machines).
        "checkout": str(settings.BASE_DIR) if local else "/path/to/powercontext",
        "default_url": base == "http://127.0.0.1:8000",
    }
    return render(request, "server/home.html", context)
