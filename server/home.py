"""The home page at ``/``: what this server is, whether it is ready, which agents have been
using it lately, and the exact commands that connect Codex and Claude Code to it.

Anonymous visitors on this machine see counts only; anonymous visitors from elsewhere
(a server with a token listens beyond loopback) see the status and the connect commands
alone. The agents seen are counted from the prompts their hooks captured, by the agent
kind and session recorded in indexed columns at capture time (never by reading a
payload): no scope id, prompt or memory leaves this view unless a staff user is logged
in, and then only scope ids with counts.
"""

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from powercontext.selectors import sources_recent_agents
from powercontext.sources import CONTENT_SOURCE
from server.addresses import is_loopback
from server.health import readiness

WINDOW = timedelta(hours=1)
# The newest captures counted at most (a few small index rows each): the page costs the
# same however long the journal grows (past this many in an hour the counts say "at
# least").
SCAN_LIMIT = 2000
AGENT_NAMES = {"codex": "Codex", "claude": "Claude Code"}


def recent_agents(now: datetime | None = None) -> dict[str, Any]:
    """Counts of the last hour's captured prompts: per agent kind, distinct sessions and
    projects, and (for staff only, by the caller) per scope. Counted by the database from
    the captures' indexed agent and session columns, never their payloads: at most
    ``SCAN_LIMIT`` index rows, whatever the prompts weigh."""
    since = (now or timezone.now()) - WINDOW
    groups = sources_recent_agents(name=CONTENT_SOURCE, since=since, limit=SCAN_LIMIT)
    agents: Counter[str] = Counter()
    scopes: Counter[str] = Counter()
    sessions: set[str] = set()
    # Prompts sent with a session (by a hook): the sessions count only these.
    in_sessions = 0
    for group in groups:
        agents[group.agent if group.agent in AGENT_NAMES else "other"] += group.prompts
        scopes[group.scope_id] += group.prompts
        if group.session_key:
            sessions.add(group.session_key)
            in_sessions += group.prompts
    return {
        "prompts": sum(agents.values()),
        "truncated": sum(agents.values()) == SCAN_LIMIT,
        "agents": [
            # No agent recorded: captured through the API, MCP or a script, not a hook.
            {"name": AGENT_NAMES.get(kind), "prompts": count}
            for kind, count in sorted(agents.items(), key=lambda item: (-item[1], item[0]))
        ],
        "sessions": len(sessions),
        "in_sessions": in_sessions,
        "projects": len(scopes),
        "scopes": scopes.most_common(20),
    }


def home(request: HttpRequest) -> HttpResponse:
    try:
        ready = readiness()
    except DatabaseError:
        ready = {"status": "not_ready", "checks": {}}
    base = request.build_absolute_uri("/").rstrip("/")
    host = request.get_host().rsplit(":", 1)[0].strip("[]")
    on_this_machine = is_loopback(request.META.get("REMOTE_ADDR", ""))
    local = is_loopback(host) and on_this_machine
    staff = request.user.is_authenticated and request.user.is_staff
    # When and how much this machine's agents work is not for a neighbour on the network
    # (a server with a token listens there): anonymous visitors from elsewhere get the
    # status and the connect commands only, and nothing is counted for them.
    recent, hidden = None, not (staff or on_this_machine)
    if not hidden:
        try:
            recent = recent_agents()
        except DatabaseError:
            recent = None
    if not staff and recent is not None:
        recent = {key: value for key, value in recent.items() if key != "scopes"}
    context = {
        "base": base,
        "ready": ready,
        "recent": recent,
        "recent_hidden": hidden,
        "staff": staff,
        "token_required": settings.POWERCONTEXT_API_TOKEN is not None,
        # The checkout's path only for a visitor on this machine, where it is the path to
        # type; others get a placeholder (a path says nothing useful across machines).
        "checkout": str(settings.BASE_DIR) if local else "/path/to/powercontext",
        "default_url": base == "http://127.0.0.1:8000",
    }
    return render(request, "server/home.html", context)
