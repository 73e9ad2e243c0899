"""Read-only admin pages for the kernel's records: artifact revisions and captured sources
(DESIGN.md §8). Memory revisions and prompt sources are most of what they hold; the
Memory browser and the Experience pages link here.

The kernel knows no family: what a revision changed is shown by the renderers its family
registered in ``powercontext.desk`` (Memory does, in ``memory.admin``); other families'
revisions show "-" there and their whole content below.
"""

import json

from django.contrib import admin
from django.utils.html import format_html

from powercontext.desk import ReadOnlyAdmin, ScopeFilter, human_datetime, revision_changes_of
from powercontext.models import ArtifactRevision, SourceRecord
from powercontext.visible_text import reveal


def pretty_json(text: str):
    shown = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return format_html('<pre class="pc-text">{}</pre>', reveal(shown))


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
        changes = revision_changes_of(obj.family)
        return "-" if changes is None else changes.summary(json.loads(obj.content))

    @admin.display(description="changes")
    def changes(self, obj):
        changes = revision_changes_of(obj.family)
        return "-" if changes is None else changes.detail(json.loads(obj.content))

    @admin.display(description="content")
    def pretty_content(self, obj):
        return pretty_json(obj.content)


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
        if not obj.payload:
            return "Purged: the content is gone; its place in the journal stays."
        return pretty_json(obj.payload)
