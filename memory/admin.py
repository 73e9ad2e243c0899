"""The Memory browser: read-only admin pages for Memory and the kernel records it is made
of (DESIGN.md §8).

Entries are listed by scope with their state now (active, retired, or superseded by a
newer version), kind and version; each entry's page shows its whole history with the
reason every change recorded; revisions list their changes. Nothing here can add, change
or delete: Memory changes only through ``memory.services`` (the HTTP API). The generic
kernel models (``ArtifactRevision``, ``SourceRecord``) are registered here because Memory
revisions and prompt sources are most of what they hold; Experience revisions are
browsed from the Experience pages and link here.
"""

import json

from django.contrib import admin
from django.db.models import Case, CharField, OuterRef, Subquery, Value, When
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from memory.models import ManifestState, MemoryEntryVersion, MemoryManifestRow
from memory.selectors import memory_entry_history, state_label
from memory.values import CHANGE_OP_WIRE
from powercontext.desk import DefaultedFilter, ReadOnlyAdmin, human_datetime
from powercontext.models import ArtifactRevision, SourceRecord
from powercontext.visible_text import excerpt, reveal

SUPERSEDED = "superseded"


def pretty_json(text: str):
    shown = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return format_html('<pre class="pc-text">{}</pre>', reveal(shown))


def entry_version_link(entry_version_id: str, label: str | None = None):
    url = reverse("admin:memory_memoryentryversion_change", args=[entry_version_id])
    return format_html('<a href="{}">{}</a>', url, reveal(label or entry_version_id))


def _state_badge(label: str):
    return format_html('<span class="pc-state-{}">{}</span>', label, label)


class ScopeFilter(admin.SimpleListFilter):
    title = "scope"
    parameter_name = "scope"

    def lookups(self, request, model_admin):
        scopes = model_admin.model.objects.order_by("scope_id").values_list("scope_id", flat=True)
        return [(scope, scope) for scope in scopes.distinct()]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset if value is None else queryset.filter(scope_id=value)


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
        "scope_label",
        "created",
    )
    list_display_links = ("entry_label", "text_excerpt")
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
        "history",
    )
    readonly_fields = ("state_badge", "scope_label", "stored_text", "created", "history")

    def get_queryset(self, request):
        # The entry's open manifest row says what it is now; a version without one was
        # replaced by a newer version of the same entry.
        open_row = MemoryManifestRow.objects.filter(
            entry_version=OuterRef("pk"), valid_to__isnull=True
        ).values("state")[:1]
        return (
            super()
            .get_queryset(request)
            .annotate(open_state=Subquery(open_row))
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
    found = ArtifactRevision.objects.filter(
        scope_id=scope_id, family="memory", artifact_id="memory", revision=revision
    ).first()
    if found is None:
        return str(revision)
    url = reverse("admin:powercontext_artifactrevision_change", args=[found.pk])
    return format_html('<a href="{}">{}</a>', url, revision)


@admin.register(MemoryManifestRow)
class MemoryManifestRowAdmin(ReadOnlyAdmin):
    list_display = ("entry_id", "entry_version_id", "state_badge", "valid_from", "valid_to")
    list_filter = ("state", ScopeFilter)
    search_fields = ("=entry_id", "=scope_id")
    ordering = ("scope_id", "entry_id", "valid_from")

    @admin.display(description="state", ordering="state")
    def state_badge(self, obj):
        return _state_badge(state_label(obj.state))


@admin.register(ArtifactRevision)
class ArtifactRevisionAdmin(ReadOnlyAdmin):
    list_display = ("family", "artifact_id", "revision", "change_summary", "scope_label", "created")
    list_filter = ("family", ScopeFilter)
    search_fields = ("=artifact_id", "=scope_id")
    ordering = ("scope_id", "family", "artifact_id", "-revision")
    fields = (
        "scope_label",
        "family",
        "artifact_id",
        "revision",
        "created",
        "changes",
        "pretty_content",
        "previous_hash",
        "revision_hash",
    )
    readonly_fields = ("scope_label", "created", "changes", "pretty_content")

    @admin.display(description="scope", ordering="scope_id")
    def scope_label(self, obj):
        return reveal(obj.scope_id)

    @admin.display(description="written", ordering="created_at")
    def created(self, obj):
        return human_datetime(obj.created_at)

    @admin.display(description="changes")
    def change_summary(self, obj):
        if obj.family != "memory":
            return "-"
        rows = json.loads(obj.content).get("changes", [])
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

    @admin.display(description="changes")
    def changes(self, obj):
        if obj.family != "memory":
            return "-"
        rows = json.loads(obj.content).get("changes", [])
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

    @admin.display(description="content")
    def pretty_content(self, obj):
        return pretty_json(obj.content)


def _version_or_dash(entry_version_id):
    return "-" if entry_version_id is None else entry_version_link(entry_version_id)


@admin.register(SourceRecord)
class SourceRecordAdmin(ReadOnlyAdmin):
    list_display = ("source_id", "source_type", "position", "scope_label", "created")
    list_filter = (ScopeFilter,)
    search_fields = ("=source_id", "=scope_id")
    ordering = ("scope_id", "-position")
    fields = ("scope_label", "source_type", "source_id", "position", "created", "pretty_payload")
    readonly_fields = ("scope_label", "created", "pretty_payload")

    @admin.display(description="scope", ordering="scope_id")
    def scope_label(self, obj):
        return reveal(obj.scope_id)

    @admin.display(description="captured", ordering="created_at")
    def created(self, obj):
        return human_datetime(obj.created_at)

    @admin.display(description="payload")
    def pretty_payload(self, obj):
        return pretty_json(obj.payload)
