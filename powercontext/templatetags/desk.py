"""Template filters of the review desk: ``{{ text|reveal }}`` shows stored text with its
hidden characters marked (escaped first, so autoescaping stays safe), ``{{ when|human }}``
the desk's one date format."""

from django import template

from powercontext.desk import human_datetime
from powercontext.visible_text import excerpt, reveal

register = template.Library()


@register.filter(name="reveal")
def reveal_filter(value):
    return reveal("" if value is None else str(value))


@register.filter(name="reveal_excerpt")
def reveal_excerpt_filter(value, limit=120):
    return reveal(excerpt("" if value is None else str(value), int(limit)))


@register.filter(name="human")
def human_filter(value):
    return human_datetime(value)
