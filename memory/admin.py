"""The Memory browser: read-only admin pages for Memory (DESIGN.md §8).

Entries are listed by scope with their state now (active, retired, or superseded by a
newer version), kind and version; each entry's page shows its whole history with the
reason every change recorded; revisions list their changes (the kernel's revision pages,
``powercontext.admin``, show them with the renderers registered here). Nothing here can
add, change or delete: Memory changes only through ``memory.services`` (the HTTP API).
The one desk action is a reviewer's: mark an active entry's current version for every
session's start (``contextpack.session``), or take the mark off; who and when are kept.
The kernel's records are read through ``powercontext.selectors``.
"""

from typing import Any

from django.contrib import admin, messages
from django.db.models import Case, CharField, OuterRef, Subquery, Value, When
from django.utils.html import format_html, format_html_join

from memory.models import (
    SESSION_MARK_PERMISSION,
    ManifestState,
    MemoryEntryVersion,
    MemoryManifestRow,
    SessionStartMark,
)
from memory.selectors import memory_entry_history, state_label
from memory.services import session_mark, session_unmark
from memory.values import CHANGE_OP_WIRE, MEMORY_ARTIFACT_ID, MEMORY_FAMILY
from powercontext.desk import (
    DefaultedFilter,
    ReadOnlyAdmin,
    RevisionChanges,
    ScopeFilter,
    admin_link,
    human_datetime,
    revision_changes_register,
)
from powercontext.selectors import artifact_revision_get
from powercontext.visible_text import excerpt, reveal

SUPERSEDED = "superseded"


def entry_version_link(entry_version_id: str, label: str | None = None):
    return admin_link(
        "admin:memory_memoryentryversion_change", entry_version_id, label or entry_version_id
    )


def _state_badge(label: str):
    return format_html('<span class="pc-state-{}">{}</span>', label, label)


class StateFilter(DefaultedFilter):
    """Current versions by default (one row per entry); older versions on request."""

    title = "state now"
    parameter_name = "state"
    CURRENT = "current"
    default = CURRENT

    def lookups(self, request, model_admin):
        return [
            (self.CURRENT, "Current (active or retired)"),
            ("active", "Active"),
            ("retired", "Retired"),
            (SUPERSEDED, "Superseded versions"),
            (self.ALL, "All versions"),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value == self.ALL:
            return queryset
        if value == self.CURRENT:
            return queryset.exclude(state_now=SUPERSEDED)
        return queryset.filter(state_now=value)


@admin.register(MemoryEntryVersion)
class MemoryEntryVersionAdmin(ReadOnlyAdmin):
    list_display = (
        "entry_label",
        "state_badge",
        "kind",
        "version",
        "text_excerpt",
        "session_start",
        "scope_label",
        "created",
    )
    list_display_links = ("entry_label", "text_excerpt")
    actions = ("mark_for_session_start", "unmark_for_session_start")
    list_filter = (StateFilter, ScopeFilter, "kind")
    search_fields = ("=entry_id", "=entry_version_id", "=scope_id", "text")
    ordering = ("scope_id", "entry_id", "-version")
    fields = (
        "entry_id",
        "state_badge",
        "version",
        "scope_label",
        "kind",
        "stored_text",
        "source_refs",
        "artifact_refs",
        "entry_version_id",
        "content_hash",
        "created_in_revision",
        "created",
        "session_start",
        "history",
    )
    readonly_fields = (
        "state_badge",
        "scope_label",
        "stored_text",
        "created",
        "session_start",
        "history",
    )

    def has_mark_permission(self, request):
        return request.user.has_perm(SESSION_MARK_PERMISSION)

    @admin.action(description="Mark for session start", permissions=["mark"])
    def mark_for_session_start(self, request, queryset):
        """Only an active entry's current version can be marked: a retired or superseded
        one would never be in a pack."""
        marked = skipped = 0
        for version in queryset.select_related(None):
            if getattr(version, "state_now", None) != "active":
                skipped += 1
            elif session_mark(entry_version=version, marked_by=request.user.get_username()):
                marked += 1
        self.message_user(
            request,
            f"{marked} entr{'y' if marked == 1 else 'ies'} marked for session start.",
            messages.SUCCESS,
        )
        if skipped:
            self.message_user(
                request,
                f"{skipped} left alone: only an active entry's current version can be marked.",
                messages.WARNING,
            )

    @admin.action(description="Take off session start", permissions=["mark"])
    def unmark_for_session_start(self, request, queryset):
        taken = sum(session_unmark(entry_version=version) for version in queryset)
        self.message_user(
            request,
            f"{taken} entr{'y' if taken == 1 else 'ies'} taken off session start.",
            messages.SUCCESS,
        )

    @admin.display(description="session start")
    def session_start(self, obj):
        if getattr(obj, "marked_by", None) is None:
            return "-"
        return format_html("marked by {}, {}", reveal(obj.marked_by), human_datetime(obj.marked_at))

    def get_queryset(self, request):
        # The entry's open manifest row says what it is now; a version without one was
        # replaced by a newer version of the same entry.
        open_row = MemoryManifestRow.objects.filter(
            entry_version=OuterRef("pk"), valid_to__isnull=True
        ).values("state")[:1]
        mark = SessionStartMark.objects.filter(entry_version=OuterRef("pk"))
        return (
            super()
            .get_queryset(request)
            .annotate(open_state=Subquery(open_row))
            .annotate(
                marked_by=Subquery(mark.values("marked_by")[:1]),
                marked_at=Subquery(mark.values("marked_at")[:1]),
            )
            .annotate(
                state_now=Case(
                    When(open_state=ManifestState.ACTIVE, then=Value("active")),
                    When(open_state=ManifestState.INACTIVE, then=Value("retired")),
                    default=Value(SUPERSEDED),
                    output_field=CharField(),
                )
            )
        )

    @admin.display(description="entry", ordering="entry_id")
    def entry_label(self, obj):
        # Ids are long and alike: a short form, the whole id in the tooltip and the page.
        short = obj.entry_id if len(obj.entry_id) <= 15 else obj.entry_id[:14] + "…"
        return format_html('<span class="pc-id" title="{}">{}</span>', obj.entry_id, reveal(short))

    @admin.display(description="state now", ordering="state_now")
    def state_badge(self, obj):
        return _state_badge(getattr(obj, "state_now", None) or SUPERSEDED)

    @admin.display(description="text")
    def text_excerpt(self, obj):
        return reveal(excerpt(obj.text))

    @admin.display(description="scope", ordering="scope_id")
    def scope_label(self, obj):
        return reveal(obj.scope_id)

    @admin.display(description="text")
    def stored_text(self, obj):
        return format_html('<div class="pc-text">{}</div>', reveal(obj.text))

    @admin.display(description="written", ordering="created_at")
    def created(self, obj):
        return human_datetime(obj.created_at)

    @admin.display(description="history (oldest first)")
    def history(self, obj):
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class='pc-text'>{}</td>"
            "<td>{}</td></tr>",
            (
                (
                    _revision_link(obj.scope_id, change.revision),
                    change.op,
                    entry_version_link(change.entry_version_id, f"v{change.version}"),
                    _state_badge(change.state),
                    reveal(change.reason) if change.reason else "-",
                    human_datetime(change.at),
                )
                for change in memory_entry_history(scope_id=obj.scope_id, entry_id=obj.entry_id)
            ),
        )
        return format_html(
            '<table class="pc-history" id="entry-history"><thead><tr><th>Revision</th>'
            "<th>Change</th><th>Version</th><th>State after</th><th>Reason</th><th>When</th>"
            "</tr></thead><tbody>{}</tbody></table>",
            rows,
        )


def _revision_link(scope_id: str, revision: int):
    found = artifact_revision_get(
        scope_id=scope_id, family=MEMORY_FAMILY, artifact_id=MEMORY_ARTIFACT_ID, revision=revision
    )
    if found is None:
        return str(revision)
    return admin_link("admin:powercontext_artifactrevision_change", found.record_id, str(revision))


@admin.register(MemoryManifestRow)
class MemoryManifestRowAdmin(ReadOnlyAdmin):
    list_display = ("entry_id", "entry_version_id", "state_badge", "valid_from", "valid_to")
    list_filter = ("state", ScopeFilter)
    search_fields = ("=entry_id", "=scope_id")
    ordering = ("scope_id", "entry_id", "valid_from")

    @admin.display(description="state", ordering="state")
    def state_badge(self, obj):
        return _state_badge(state_label(obj.state))


# -- what a Memory revision changed, on the kernel's revision pages ------------------


def _change_summary(content: dict[str, Any]):
    rows = content.get("changes", [])
    return format_html_join(
        ", ",
        "{} {}{}",
        (
            (
                CHANGE_OP_WIRE.get(change["op"], change["op"]),
                reveal(change["entry_id"]),
                format_html(" ({})", reveal(excerpt(change["reason"], 60)))
                if change.get("reason")
                else "",
            )
            for change in rows
        ),
    )


def _change_detail(content: dict[str, Any]):
    rows = content.get("changes", [])
    return format_html_join(
        "",
        "<div class='pc-text'>{} {}: {} → {}{}</div>",
        (
            (
                CHANGE_OP_WIRE.get(change["op"], change["op"]),
                reveal(change["entry_id"]),
                _version_or_dash(change["from_entry_version_id"]),
                _version_or_dash(change["to_entry_version_id"]),
                format_html(" (reason: {})", reveal(change["reason"]))
                if change.get("reason")
                else "",
            )
            for change in rows
        ),
    )


def _version_or_dash(entry_version_id):
    return "-" if entry_version_id is None else entry_version_link(entry_version_id)


revision_changes_register(
    MEMORY_FAMILY, RevisionChanges(summary=_change_summary, detail=_change_detail)
)
