"""What every page of the review desk shares: read-only admin pages, one date format, and
the desk's stylesheet (long words wrap, hidden characters are marked)."""

from datetime import datetime

from django.contrib import admin
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

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
