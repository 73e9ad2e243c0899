"""What every page of the review desk shares: read-only admin pages, one date format, the
desk's stylesheet (long words wrap, hidden characters are marked), the scope filter, and
how a family's revisions say what they changed. It is what one app's admin takes from
another's: no admin module imports another app's admin (issue 15)."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from powercontext.visible_text import reveal

DESK_CSS = {"all": ["powercontext/desk.css"]}


def human_datetime(value: datetime | None) -> SafeString | str:
    """One date format for the whole desk, ``1 Dec 2026, 06:35 UTC``, with the exact
    instant in the ``datetime`` attribute and the tooltip."""
    if value is None:
        return "-"
    local = timezone.localtime(value)
    exact = local.isoformat(timespec="seconds")
    # Two unbreakable halves: a narrow column wraps between date and time, never inside.
    return format_html(
        '<time datetime="{}" title="{}"><span>{} {}</span> <span>{} {}</span></time>',
        exact,
        exact,
        local.day,
        f"{local:%b %Y},",
        f"{local:%H:%M}",
        local.tzname(),
    )


def change_url(viewname: str, pk: Any) -> str:
    """The admin page of row ``pk`` (``viewname``: ``admin:<app>_<model>_change``), its key
    quoted as the admin's own links quote it. The admin reads ``_22``, ``_40`` and the like
    in a key as escaped characters: unquoted, one random id in about forty
    (``mem_ver_40cd...``) names another row, and its page sends the reader to the index."""
    return reverse(viewname, args=[quote(pk)])


def admin_link(viewname: str, pk: Any, label: str) -> SafeString:
    """A link to :func:`change_url` reading ``label``, its hidden characters shown."""
    return format_html('<a href="{}">{}</a>', change_url(viewname, pk), reveal(label))


class ReadOnlyAdmin(admin.ModelAdmin):
    """Browse only: these rows are written by services and never edited by hand."""

    class Media:
        css = DESK_CSS

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class DefaultedFilter(admin.SimpleListFilter):
    """A list filter that applies ``default`` when the URL names no choice (and shows it
    selected), with an ``all`` choice that filters nothing."""

    ALL = "all"
    default: str

    def value(self) -> str:
        return super().value() or self.default

    def choices(self, changelist):
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }


class ScopeFilter(admin.SimpleListFilter):
    """The scopes that have rows of the page's model, one choice each."""

    title = "scope"
    parameter_name = "scope"

    def lookups(self, request, model_admin):
        scopes = model_admin.model.objects.order_by("scope_id").values_list("scope_id", flat=True)
        return [(scope, scope) for scope in scopes.distinct()]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset if value is None else queryset.filter(scope_id=value)


RevisionRenderer = Callable[[dict[str, Any]], SafeString | str]


@dataclass(frozen=True)
class RevisionChanges:
    """How a family's revision content shows what the revision changed: ``summary`` in
    the revision list, ``detail`` on the revision's page."""

    summary: RevisionRenderer
    detail: RevisionRenderer


# The kernel's revision pages know no family: each family that records changes in its
# revisions registers here from its own admin module (loaded by admin autodiscovery
# before any page is served); a family that registers nothing shows "-".
_REVISION_CHANGES: dict[str, RevisionChanges] = {}


def revision_changes_register(family: str, changes: RevisionChanges) -> None:
    _REVISION_CHANGES[family] = changes


def revision_changes_of(family: str) -> RevisionChanges | None:
    return _REVISION_CHANGES.get(family)
