"""The desk's pack preview: what would the agent see for this prompt, and why?

A staff user enters a scope and a prompt; the page shows the exact ``content`` that
``POST /v1/context/prepare`` returns for them (what the hook injects as the agent's
additional context) beside the reasons: each item's retrieval channel and rank and whether
it was cut, each hit left out and why, and what became of each query term.

It runs ``contextpack.application.explain_context``: the same retrieval and builder as prepare,
in one read snapshot. It writes nothing (no source is captured, so the previewed prompt
never joins the prompt history), is not counted in the metrics, and logs nothing but the
route (``server.middleware.AccessLogMiddleware``). The prompt travels in a POST body,
never in the URL, where a proxy or the browser history would keep it.
"""

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse

from contextpack import builder
from contextpack.application import explain_context
from contextpack.explanation import HitExplanation, PackExplanation, TermExplanation
from contextpack.serializers import PrepareContextInput
from powercontext.desk import change_url
from powercontext.exceptions import PowerContextError
from powercontext.scope_warnings import scope_warning
from powercontext.search import policy

# What the hook asks for (hooks/powercontext_hook.py MAX_BYTES): the preview's default.
HOOK_MAX_BYTES = 8000

# The pack shows Memory entries and approved Experience: who may see both may preview.
REQUIRED_PERMISSIONS = ("memory.view_memoryentryversion", "experience.view_experience")

FAMILY_NAMES = {"memory": "Memory", "experience": "Experience"}


class PreviewForm(forms.Form):
    scope_id = forms.CharField(
        label="Scope",
        strip=False,
        widget=forms.TextInput(attrs={"size": 60, "autocomplete": "off", "spellcheck": "false"}),
        help_text="As the hook sends it, e.g. git:github.com/team/repo.",
    )
    query = forms.CharField(
        label="Prompt",
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
    )
    max_bytes = forms.IntegerField(
        label="Budget (bytes)",
        initial=HOOK_MAX_BYTES,
        help_text=f"The hook asks for {HOOK_MAX_BYTES}.",
    )

    def clean_query(self) -> str:
        # Browsers send a textarea's line breaks as CRLF; an agent's prompt has LF. The
        # difference matters: prepare leaves this very prompt out of the prompt history
        # by comparing it character for character.
        return self.cleaned_data["query"].replace("\r\n", "\n")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        # The same validation as the API, so the preview accepts exactly what prepare does.
        checked = PrepareContextInput(data=cleaned)
        if not checked.is_valid():
            for field, messages in checked.errors.items():
                target = field if field in self.fields else None
                for message in messages:
                    self.add_error(target, str(message))
            return cleaned
        return dict(checked.validated_data)


@dataclass(frozen=True)
class _Row:
    """One hit as the page shows it."""

    hit: HitExplanation
    label: str  # the full id, as in the pack
    short_label: str  # what fits a table cell; the full id is its tooltip
    revision: int
    link: str | None
    channels: str
    reason: str


def pack_preview(request):
    """The preview page: the form, and after a POST the pack beside its explanation."""
    if not request.user.has_perms(REQUIRED_PERMISSIONS):
        raise PermissionDenied
    context: dict[str, Any] = {
        **admin.site.each_context(request),
        "title": "Pack preview",
        "subtitle": "What would the agent see?",
    }
    if request.method == "POST":
        form = PreviewForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            # The API sends it in the PowerContext-Warning header; here, the sentence.
            warning = scope_warning(data["scope_id"])
            context["scope_warning"] = warning.partition(": ")[2] if warning else None
            try:
                prepared, explanation = explain_context(
                    scope_id=data["scope_id"], query=data["query"], max_bytes=data["max_bytes"]
                )
            except PowerContextError:
                # Prepare answers these with a 500 and no pack: the index disagrees with
                # the head it was read with. Say so on the page, not with an error page.
                context["failure"] = (
                    "Prepare would fail for this prompt (internal_error, no pack): the search "
                    "index disagrees with the Memory or Experience head. "
                    "Run manage.py check_integrity, then manage.py rebuild_index."
                )
            else:
                context.update(
                    prepared=prepared,
                    explanation=explanation,
                    refused=sum(not row.admitted for row in explanation.candidates),
                    **_rows(explanation),
                    terms=_terms(explanation),
                )
    else:
        form = PreviewForm()
    context["form"] = form
    return TemplateResponse(request, "admin/contextpack/preview.html", context)


def _rows(explanation: PackExplanation) -> dict[str, list[_Row]]:
    included, left_out = [], []
    for hit in explanation.hits:
        row = _Row(
            hit=hit,
            label=_label(hit),
            short_label=_short_label(hit),
            revision=_revision(hit),
            link=_link(hit),
            channels=" + ".join(hit.matched_by),
            reason=_reason(hit, explanation),
        )
        if hit.decision.outcome == builder.INCLUDED:
            included.append(row)
        else:
            left_out.append(row)
    included.sort(key=lambda row: row.hit.decision.position)
    return {"included": included, "left_out": left_out}


def _label(hit: HitExplanation) -> str:
    if hit.family == "memory":
        revision = hit.citation["memory_ref"]["revision"]
        return f"{hit.citation['entry_id']} @ r{revision}"
    ref = hit.citation["artifact_ref"]
    return f"{ref['artifact_id']} r{ref['revision']}"


# Ids are 40 characters of hex after their prefix: this many tell them apart on a page.
SHORT_ID_CHARS = 16


def _short_label(hit: HitExplanation) -> str:
    if hit.family == "memory":
        entry_id = hit.citation["entry_id"]
        return entry_id if len(entry_id) <= SHORT_ID_CHARS + 1 else entry_id[:SHORT_ID_CHARS] + "…"
    return hit.citation["artifact_ref"]["artifact_id"]


def _revision(hit: HitExplanation) -> int:
    ref = hit.citation["memory_ref" if hit.family == "memory" else "artifact_ref"]
    return ref["revision"]


def _link(hit: HitExplanation) -> str | None:
    if hit.family != "memory" or not hit.citation["entry_version_id"]:
        return None
    return change_url("admin:memory_memoryentryversion_change", hit.citation["entry_version_id"])


def _reason(hit: HitExplanation, explanation: PackExplanation) -> str:
    """Why the builder did what it did with ``hit``, in a sentence."""
    decision = hit.decision
    family = FAMILY_NAMES[hit.family]
    outcome = decision.outcome
    if outcome == builder.INCLUDED:
        if decision.cut == builder.CUT_AT_CAP:
            return (
                f"truncated: {decision.source_bytes} bytes, cut at the "
                f"{builder.ITEM_SOURCE_CAP_BYTES}-byte item cap"
            )
        if decision.cut == builder.CUT_TO_FIT:
            return (
                f"truncated: {decision.source_bytes} bytes, cut to fit the "
                f"{decision.budget_bytes} bytes left in the budget"
            )
        return "whole"
    if outcome == builder.OUTSIDE_WINDOW:
        window = (
            explanation.memory.window if hit.family == "memory" else explanation.experience.window
        )
        return f"outside the window: the pack considers the best {window} {family} hits"
    if outcome == builder.UNUSABLE:
        return "unusable: blank text or a missing identifier"
    if outcome == builder.DUPLICATE:
        return f"duplicate of {family} #{decision.duplicate_of}"
    if outcome == builder.FAMILY_LIMIT:
        limit = builder.MAX_MEMORY_ITEMS if hit.family == "memory" else builder.MAX_EXPERIENCES
        return f"over the {family} limit: the best {limit} were already chosen"
    if outcome == builder.ITEM_LIMIT:
        return f"the pack already held its {builder.MAX_ITEMS} items"
    if outcome == builder.OVER_BUDGET:
        return (
            f"over budget: {decision.source_bytes} bytes, {max(decision.budget_bytes or 0, 0)} "
            f"bytes left, and no cut of {builder.MIN_TRUNCATED_BYTES} bytes or more fitted"
        )
    return outcome


def _terms(explanation: PackExplanation) -> dict[str, Any]:
    """The query's terms: the function words in one line (a long prompt has many), the
    others one row each with what each family's search made of them."""
    stop_words, rows = [], []
    memory, experience = explanation.memory, explanation.experience
    for in_memory, in_experience in zip(memory.terms, experience.terms, strict=True):
        if in_memory.decision == policy.STOP_WORD:
            stop_words.append(in_memory.term)
            continue
        rows.append(
            {
                "term": in_memory.term,
                "recent_prompts": in_memory.recent_prompts,
                "memory": _term_reason(in_memory, memory.documents, explanation.recent_prompts),
                "experience": _term_reason(
                    in_experience, experience.documents, explanation.recent_prompts
                ),
                "searched": policy.SEARCHED in (in_memory.decision, in_experience.decision),
            }
        )
    return {"stop_words": stop_words, "rows": rows}


def _term_reason(term: TermExplanation, documents: int, prompts: int) -> str:
    decision = term.decision
    if decision == policy.SEARCHED:
        return f"searched: in {term.documents} of {documents} documents"
    if decision == policy.STOP_WORD:
        return "left out: a function word"
    if decision == policy.RECURRING:
        return (
            f"weighted down as a recurring instruction: in {term.recent_prompts} of the "
            f"{prompts} recent prompts"
        )
    if decision == policy.UNKNOWN:
        return "left out: in no document"
    if decision == policy.TOO_COMMON:
        return (
            f"weighted down as common: in {term.documents} of {documents} documents "
            f"(over {policy.COMMON_TERM_SHARE:.0%}); searched when the rarer terms find nothing"
        )
    if decision == policy.OVER_TERM_LIMIT:
        return f"left out: only the {policy.MAX_QUERY_TERMS} rarest terms are searched"
    return decision
