"""Read-only admin for Memory and the kernel records it is made of (DESIGN.md §8).

Memory is browsable (entries and their version history, revisions and their changes,
captured sources) but changed only through ``memory.services``: nothing here can add,
change or delete. The generic kernel models (``ArtifactRevision``, ``SourceRecord``) are
registered here because Memory revisions and prompt sources are most of what they hold;
Experience revisions are browsed from the Experience pages and link here.
"""

import json

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from memory.models import MemoryEntryVersion, MemoryManifestRow
from powercontext.models import ArtifactRevision, SourceRecord

EXCERPT_CHARS = 120


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pretty_json(text: str):
    return format_html("<pre>{}</pre>", json.dumps(json.loads(text), indent=2, ensure_ascii=False))


class ReadOnlyAdmin(admin.ModelAdmin):
    """Browse only: these rows are written by services and never edited by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def entry_version_link(entry_version_id: str, label: str | None = None):
    url = reverse("admin:memory_memoryentryversion_change", args=[entry_version_id])
    return format_html('<a href="{}">{}</a>', url, label or entry_version_id)


@admin.register(MemoryEntryVersion)
class MemoryEntryVersionAdmin(ReadOnlyAdmin):
    list_display = (
        "entry_id",
        "version",
        "kind",
        "text_excerpt",
        "scope_id",
        "created_in_revision",
    )
    list_filter = ("kind",)
    search_fields = ("=entry_id", "=entry_version_id", "=scope_id", "text")
    ordering = ("scope_id", "entry_id", "version")
    fields = (
        "entry_version_id",
        "entry_id",
        "version",
        "scope_id",
        "kind",
        "text",
        "source_refs",
        "artifact_refs",
        "content_hash",
        "created_in_revision",
        "created_at",
        "history",
        "manifest",
    )
    readonly_fields = ("history", "manifest")

    @admin.display(description="text")
    def text_excerpt(self, obj):
        return excerpt(obj.text)

    @admin.display(description="version history")
    def history(self, obj):
        versions = MemoryEntryVersion.objects.filter(
            scope_id=obj.scope_id, entry_id=obj.entry_id
        ).order_by("version")
        return format_html_join(
            "",
            "<div>v{} (revision {}): {}</div>",
            (
                (
                    v.version,
                    v.created_in_revision,
                    entry_version_link(v.entry_version_id, excerpt(v.text, 80)),
                )
                for v in versions
            ),
        )

    @admin.display(description="in revisions")
    def manifest(self, obj):
        rows = obj.manifest_rows.order_by("valid_from")
        return format_html_join(
            "",
            "<div>{} from revision {} to {}</div>",
            ((row.state, row.valid_from, row.valid_to or "head") for row in rows),
        )


@admin.register(MemoryManifestRow)
class MemoryManifestRowAdmin(ReadOnlyAdmin):
    list_display = ("entry_id", "entry_version_id", "state", "valid_from", "valid_to", "scope_id")
    list_filter = ("state",)
    search_fields = ("=entry_id", "=scope_id")
    ordering = ("scope_id", "entry_id", "valid_from")


@admin.register(ArtifactRevision)
class ArtifactRevisionAdmin(ReadOnlyAdmin):
    list_display = ("family", "artifact_id", "revision", "scope_id", "created_at")
    list_filter = ("family",)
    search_fields = ("=artifact_id", "=scope_id")
    ordering = ("scope_id", "family", "artifact_id", "-revision")
    fields = (
        "scope_id",
        "family",
        "artifact_id",
        "revision",
        "created_at",
        "changes",
        "pretty_content",
        "previous_hash",
        "revision_hash",
    )
    readonly_fields = ("changes", "pretty_content")

    @admin.display(description="changes")
    def changes(self, obj):
        if obj.family != "memory":
            return "-"
        rows = json.loads(obj.content).get("changes", [])
        return format_html_join(
            "",
            "<div>{} {}: {} → {} {}</div>",
            (
                (
                    change["op"],
                    change["entry_id"],
                    _version_or_dash(change["from_entry_version_id"]),
                    _version_or_dash(change["to_entry_version_id"]),
                    f"({change['reason']})" if change.get("reason") else "",
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
    list_display = ("source_id", "source_type", "position", "scope_id", "created_at")
    search_fields = ("=source_id", "=scope_id")
    ordering = ("scope_id", "-position")
    fields = ("scope_id", "source_type", "source_id", "position", "created_at", "pretty_payload")
    readonly_fields = ("pretty_payload",)

    @admin.display(description="payload")
    def pretty_payload(self, obj):
        return pretty_json(obj.payload)
