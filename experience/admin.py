"""The reviewer's desk (DESIGN.md §8): the queue of candidates, a detail page with the
proposal beside its evidence, and approve / reject / revise, each behind a confirmation
step. The actions call the same services as the HTTP API and report their domain errors
as messages. Staff with the view permission but not ``experience.review_candidate`` see
everything and can decide nothing. Approved Experience is browsable, read-only.

Stored text is shown with ``visible_text.reveal`` (hidden characters marked, long words
wrapped by the desk's stylesheet) and edited through ``StoredTextField`` (an untouched
field comes back byte for byte). Evidence is read through selectors: Memory's through
``memory.selectors``, captured sources and artifact revisions through
``powercontext.selectors``; nothing here queries another app's tables or imports another
app's admin.
"""

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.validators import ProhibitNullCharactersValidator
from django.db.models import Count, OuterRef, Subquery
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html, format_html_join
from rest_framework import serializers

from experience import reviewers, services
from experience.models import Candidate, CandidateStatus, CandidateVersion
from experience.selectors import current_version, proposal_of
from experience.serializers import (
    CandidateRejectInput,
    CandidateReviseInput,
    ExperienceProposalSchema,
)
from experience.values import EXPERIENCE_FAMILY, PROPOSAL_FIELDS, Proposal
from memory.selectors import memory_revision_cited
from powercontext.desk import (
    DESK_CSS,
    DefaultedFilter,
    ReadOnlyAdmin,
    ScopeFilter,
    admin_link,
    change_url,
    human_datetime,
)
from powercontext.exceptions import PowerContextError
from powercontext.selectors import (
    artifact_revision_get,
    artifact_revisions_list,
    heads_with_content,
    source_get,
)
from powercontext.visible_text import breaks_are_crlf, editable, excerpt, reveal, submitted

from .models import Experience

LESSON_EXCERPT_CHARS = 160

# -- the queue ------------------------------------------------------------------------


class StatusFilter(DefaultedFilter):
    """Pending by default: the queue is what still needs a decision."""

    title = "status"
    parameter_name = "status"
    default = CandidateStatus.PENDING

    def lookups(self, request, model_admin):
        return [*CandidateStatus.choices, (self.ALL, "All")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == self.ALL:
            return queryset
        return queryset.filter(status=value)


def _status_counts(queryset) -> dict[str, int]:
    counts = dict.fromkeys(CandidateStatus.values, 0)
    for row in queryset.order_by().values("status").annotate(n=Count("pk")):
        counts[row["status"]] = row["n"]
    return counts


# -- forms of the decisions -----------------------------------------------------------


class DecisionForm(forms.Form):
    # The version the reviewer saw: a newer one is a conflict, not a silent approval.
    expected_version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class StoredTextField(forms.CharField):
    """Stored text edited in a textarea (or carried in a hidden input) exactly: written
    with ``visible_text.editable`` and read back with ``visible_text.submitted``, so an
    untouched field returns the stored text, NUL, CRs and hidden characters included.
    Limits are not checked here but by the API's own fields (``_api_errors``)."""

    def __init__(self, *, crlf: bool = False, **kwargs):
        self.crlf = crlf
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4, "class": "pc-edit"}))
        super().__init__(strip=False, **kwargs)
        # NUL is data (the API accepts it): Django's form default would refuse it.
        self.validators = [
            v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)
        ]

    def prepare_value(self, value):
        return editable(value, crlf=self.crlf) if isinstance(value, str) else value

    def to_python(self, value):
        value = super().to_python(value)
        return submitted(value, crlf=self.crlf)


MARKER_HELP = (
    "Characters a browser would hide or change (NUL, a lone CR, bidi and zero-width "
    "characters) are shown as markers such as ⟨U+0000⟩ or ⟨U+202E⟩ and written back as "
    "those characters; type a marker to insert one."
)


def _api_errors(form: forms.Form, checks: dict[str, Any]) -> None:
    """Add the errors the HTTP API would give for these values (its own fields, so the
    desk counts and refuses exactly as the API does)."""
    for name, (field, value) in checks.items():
        try:
            field.run_validation(value)
        except serializers.ValidationError as error:
            detail = error.detail
            for message in detail if isinstance(detail, list) else [detail]:
                form.add_error(name, str(message))


class RejectForm(DecisionForm):
    reason = StoredTextField(
        help_text="Required: why this is not a lesson worth recalling.",
        widget=forms.Textarea(attrs={"rows": 4, "class": "pc-edit"}),
    )

    def clean(self):
        data = super().clean()
        if "reason" in data:
            _api_errors(self, {"reason": (CandidateRejectInput().fields["reason"], data["reason"])})
        return data


class ReviseForm(DecisionForm):
    """A new version of the proposal, edited from ``original`` (the current version)."""

    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, original: CandidateVersion, hidden: bool = False, **kwargs):
        self.original = original
        self.original_reason = original.reason or ""
        super().__init__(*args, **kwargs)
        for name in (*PROPOSAL_FIELDS, "reason"):
            stored = self.original_reason if name == "reason" else getattr(original, name)
            widget = (
                forms.HiddenInput()
                if hidden
                else forms.Textarea(
                    attrs={"rows": 2 if name == "reason" else 5, "class": "pc-edit"}
                )
            )
            self.fields[name] = StoredTextField(
                crlf=breaks_are_crlf(stored),
                required=name != "reason",
                widget=widget,
                help_text=(
                    "Optional; left empty keeps the proposal's reason." if name == "reason" else ""
                ),
            )
        self.order_fields(["expected_version", *PROPOSAL_FIELDS, "reason", "confirmed"])

    def clean(self):
        data = super().clean()
        proposal = ExperienceProposalSchema()
        checks = {
            name: (proposal.fields[name], data[name]) for name in PROPOSAL_FIELDS if name in data
        }
        if data.get("reason"):
            checks["reason"] = (CandidateReviseInput().fields["reason"], data["reason"])
        _api_errors(self, checks)
        return data

    def proposal(self) -> Proposal:
        return Proposal(**{name: self.cleaned_data[name] for name in PROPOSAL_FIELDS})

    def reason(self) -> str | None:
        """None keeps the previous version's reason (the service's rule)."""
        return self.cleaned_data["reason"] or None

    def changes_nothing(self) -> bool:
        reason = self.reason()
        return self.proposal() == proposal_of(self.original) and (
            reason is None or reason == self.original_reason
        )


# -- the candidate pages --------------------------------------------------------------


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = (
        "candidate_link",
        "lesson_excerpt",
        "scope_label",
        "status_label",
        "version",
        "created",
        "decider",
    )
    list_display_links = ("candidate_link", "lesson_excerpt")
    list_filter = (StatusFilter, ScopeFilter)
    search_fields = ("=candidate_id", "=scope_id")
    ordering = ("-created_at", "candidate_id")
    show_facets = admin.ShowFacets.ALWAYS
    change_list_template = "admin/experience/candidate/change_list.html"
    list_per_page = 50

    class Media:
        css = DESK_CSS

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        # Candidates change only through the decision views below (which check the review
        # permission): the model form never edits them.
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        lesson = CandidateVersion.objects.filter(
            candidate=OuterRef("pk"), version=OuterRef("version")
        ).values("lesson")[:1]
        return super().get_queryset(request).annotate(current_lesson=Subquery(lesson))

    @admin.display(description="candidate", ordering="candidate_id")
    def candidate_link(self, obj):
        # The id is long and says little: a short form, the whole id in the tooltip.
        short = obj.candidate_id if len(obj.candidate_id) <= 11 else obj.candidate_id[:10] + "…"
        return format_html(
            '<span class="pc-id" title="{}">{}</span>', obj.candidate_id, reveal(short)
        )

    @admin.display(description="lesson")
    def lesson_excerpt(self, obj):
        return reveal(excerpt(obj.current_lesson or "", LESSON_EXCERPT_CHARS))

    @admin.display(description="scope", ordering="scope_id")
    def scope_label(self, obj):
        return reveal(obj.scope_id)

    @admin.display(description="status", ordering="status")
    def status_label(self, obj):
        return obj.status

    @admin.display(description="proposed", ordering="created_at")
    def created(self, obj):
        return human_datetime(obj.created_at)

    # Not named ``decided_by``: the admin would show the model's field of that name
    # instead, the user, which an imported decision has none of (users are not carried
    # across servers); the name kept with the decision is what every desk page shows.
    @admin.display(description="decided by", ordering="decided_by_username")
    def decider(self, obj):
        return reveal(obj.decided_by_username) if obj.decided_by_username else "-"

    def changelist_view(self, request, extra_context=None):
        scope = request.GET.get(ScopeFilter.parameter_name)
        counted = (
            Candidate.objects.all() if scope is None else Candidate.objects.filter(scope_id=scope)
        )
        extra_context = {**(extra_context or {}), "status_counts": _status_counts(counted)}
        return super().changelist_view(request, extra_context)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/approve/",
                view(self.approve_view),
                name="experience_candidate_approve",
            ),
            path(
                "<path:object_id>/reject/",
                view(self.reject_view),
                name="experience_candidate_reject",
            ),
            path(
                "<path:object_id>/revise/",
                view(self.revise_view),
                name="experience_candidate_revise",
            ),
            *super().get_urls(),
        ]

    # -- detail ---------------------------------------------------------------------

    def _candidate(self, request, object_id) -> Candidate:
        candidate = Candidate.objects.filter(pk=unquote(object_id)).first()
        if candidate is None:
            raise Http404("No such candidate.")
        if not self.has_view_permission(request, candidate):
            raise DjangoPermissionDenied
        return candidate

    def _context(self, request, candidate: Candidate, **extra: Any) -> dict[str, Any]:
        version = current_version(candidate)
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Candidate {candidate.candidate_id}",
            "media": self.media,
            "candidate": candidate,
            "version": version,
            "proposal_fields": [
                (name.capitalize(), getattr(version, name)) for name in PROPOSAL_FIELDS
            ],
            "sources": [
                _source_evidence(candidate.scope_id, ref) for ref in _refs(version.source_refs)
            ],
            "artifacts": [
                _artifact_evidence(candidate.scope_id, ref) for ref in _refs(version.artifact_refs)
            ],
            "target": _experience_link(
                candidate.scope_id, version.target_artifact_id, version.target_revision
            ),
            "result": _experience_link(
                candidate.scope_id, candidate.result_artifact_id, candidate.result_revision
            ),
            "history": candidate.versions.order_by("-version"),
            "can_decide": reviewers.can_review(request.user)
            and candidate.status == CandidateStatus.PENDING,
            "detail_url": change_url("admin:experience_candidate_change", candidate.pk),
            "marker_help": MARKER_HELP,
            **extra,
        }

    def change_view(self, request, object_id, form_url="", extra_context=None):
        candidate = self._candidate(request, object_id)
        return TemplateResponse(
            request,
            "admin/experience/candidate/detail.html",
            self._context(request, candidate),
        )

    # -- decisions ------------------------------------------------------------------

    def _decision(self, request, object_id):
        candidate = self._candidate(request, object_id)
        if not reviewers.can_review(request.user):
            raise DjangoPermissionDenied
        return candidate

    def _back(self, candidate: Candidate):
        return HttpResponseRedirect(change_url("admin:experience_candidate_change", candidate.pk))

    def _done(self, request, candidate: Candidate, call, success: str):
        """Run one service call; report its domain error as a message, never a 500."""
        try:
            call()
        except PowerContextError as error:
            details = (error.details or {}).get("errors") or []
            text = " ".join([error.message, *(f"{e['field']}: {e['message']}" for e in details)])
            self.message_user(request, text, messages.ERROR)
        else:
            self.message_user(request, success, messages.SUCCESS)
        return self._back(candidate)

    def approve_view(self, request, object_id):
        candidate = self._decision(request, object_id)
        form = DecisionForm(request.POST or None, initial={"expected_version": candidate.version})
        if request.method == "POST" and form.is_valid():
            return self._done(
                request,
                candidate,
                lambda: services.candidate_approve(
                    scope_id=candidate.scope_id,
                    candidate_id=candidate.candidate_id,
                    expected_version=form.cleaned_data["expected_version"],
                    reviewer=request.user,
                ),
                "Approved: the lesson is now recallable Experience.",
            )
        return TemplateResponse(
            request,
            "admin/experience/candidate/confirm.html",
            self._context(request, candidate, form=form, decision="approve"),
        )

    def reject_view(self, request, object_id):
        candidate = self._decision(request, object_id)
        form = RejectForm(request.POST or None, initial={"expected_version": candidate.version})
        if request.method == "POST" and form.is_valid():
            return self._done(
                request,
                candidate,
                lambda: services.candidate_reject(
                    scope_id=candidate.scope_id,
                    candidate_id=candidate.candidate_id,
                    expected_version=form.cleaned_data["expected_version"],
                    reason=form.cleaned_data["reason"],
                    reviewer=request.user,
                ),
                "Rejected.",
            )
        return TemplateResponse(
            request,
            "admin/experience/candidate/confirm.html",
            self._context(request, candidate, form=form, decision="reject"),
        )

    def revise_view(self, request, object_id):
        """Edit, then confirm: the first POST shows the new version for confirmation, the
        second (``confirmed``) writes it. A submission that changes nothing writes
        nothing and says so."""
        candidate = self._decision(request, object_id)
        version = current_version(candidate)
        initial = {
            "expected_version": candidate.version,
            **proposal_of(version).as_payload(),
            "reason": version.reason or "",
        }
        form = ReviseForm(request.POST or None, initial=initial, original=version)
        stage = "edit"
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            if data["expected_version"] == candidate.version and form.changes_nothing():
                self.message_user(
                    request,
                    f"No changes: version {candidate.version} stays as it is, nothing written.",
                    messages.INFO,
                )
                return self._back(candidate)
            if data["confirmed"]:
                return self._done(
                    request,
                    candidate,
                    lambda: services.candidate_revise(
                        scope_id=candidate.scope_id,
                        candidate_id=candidate.candidate_id,
                        expected_version=data["expected_version"],
                        proposal=form.proposal(),
                        reason=form.reason(),
                        reviewer=request.user,
                    ),
                    f"Revised: version {data['expected_version'] + 1} is now pending review.",
                )
            stage = "confirm"
            form = ReviseForm(initial={**data, "confirmed": True}, original=version, hidden=True)
        return TemplateResponse(
            request,
            "admin/experience/candidate/revise.html",
            self._context(
                request,
                candidate,
                form=form,
                stage=stage,
                preview_fields=[
                    (name.capitalize(), form.initial.get(name, "")) for name in PROPOSAL_FIELDS
                ],
            ),
        )


def _refs(stored: str) -> list[dict]:
    return json.loads(stored)


def _source_evidence(scope_id: str, ref: dict) -> dict[str, Any]:
    label = f"{ref['name']}:{ref['source_id']}"
    source = source_get(scope_id=scope_id, name=ref["name"], source_id=ref["source_id"])
    if source is None:
        return {"label": reveal(label), "link": None, "preview": "not captured in this scope"}
    return {
        "label": reveal(label),
        "link": admin_link("admin:powercontext_sourcerecord_change", source.record_id, label),
        "preview": excerpt(source.content, 400),
        "captured": human_datetime(source.captured_at),
    }


def _state_phrase(then: str, now: str) -> str:
    """``active at cited revision; retired now`` (one phrase when nothing changed)."""
    if then == now:
        return f"{then} at the cited revision and now"
    return f"{then} at the cited revision; {now} now"


def _artifact_evidence(scope_id: str, ref: dict) -> dict[str, Any]:
    label = f"{ref['family']}/{ref['artifact_id']}@{ref['revision']}"
    revision = artifact_revision_get(
        scope_id=scope_id,
        family=ref["family"],
        artifact_id=ref["artifact_id"],
        revision=ref["revision"],
    )
    if revision is None:
        return {"label": reveal(label), "link": None, "entries": [], "preview": "no such revision"}
    cited = []
    if ref["family"] == "memory":
        cited = memory_revision_cited(scope_id=scope_id, revision=ref["revision"])
    return {
        "label": reveal(label),
        "link": admin_link("admin:powercontext_artifactrevision_change", revision.record_id, label),
        "entries": [
            {
                "link": admin_link(
                    "admin:memory_memoryentryversion_change",
                    entry.entry_version_id,
                    f"{entry.entry_id} v{entry.version}",
                ),
                "op": entry.op,
                "state_now": entry.state_now,
                "state": _state_phrase(entry.state_at_revision, entry.state_now),
                "newer": entry.version_now is not None and entry.version_now != entry.version,
                "version_now": entry.version_now,
                "text": excerpt(entry.text, 400),
            }
            for entry in cited
        ],
        "preview": "",
    }


def _experience_link(scope_id: str, artifact_id: str | None, revision: int | None):
    if artifact_id is None:
        return None
    head = Experience.objects.filter(scope_id=scope_id, artifact_id=artifact_id).first()
    label = f"{EXPERIENCE_FAMILY}/{artifact_id}@{revision}"
    if head is None:
        return reveal(label)
    return admin_link("admin:experience_experience_change", head.pk, label)


# -- approved Experience ---------------------------------------------------------------


@admin.register(Experience)
class ExperienceAdmin(ReadOnlyAdmin):
    list_display = ("artifact_id", "lesson", "revision", "scope_label", "updated")
    search_fields = ("=artifact_id", "=scope_id")
    ordering = ("-updated_at", "artifact_id")
    fields = ("artifact_id", "scope_label", "revision", "updated", "current", "history")
    readonly_fields = ("scope_label", "updated", "current", "history")

    def get_queryset(self, request):
        return heads_with_content(super().get_queryset(request))

    @admin.display(description="lesson")
    def lesson(self, obj):
        if not obj.head_content:
            return "-"
        return reveal(excerpt(json.loads(obj.head_content)["lesson"], LESSON_EXCERPT_CHARS))

    @admin.display(description="scope", ordering="scope_id")
    def scope_label(self, obj):
        return reveal(obj.scope_id)

    @admin.display(description="updated", ordering="updated_at")
    def updated(self, obj):
        return human_datetime(obj.updated_at)

    @admin.display(description="current revision")
    def current(self, obj):
        return _experience_block(json.loads(obj.head_content))

    @admin.display(description="history")
    def history(self, obj):
        revisions = artifact_revisions_list(
            scope_id=obj.scope_id, family=EXPERIENCE_FAMILY, artifact_id=obj.artifact_id
        )
        approvals = {
            c.result_revision: c
            for c in Candidate.objects.filter(
                scope_id=obj.scope_id, result_artifact_id=obj.artifact_id
            )
        }
        parts = []
        for revision in revisions:
            approval = approvals.get(revision.revision)
            who = (
                format_html(
                    "approved by {} on {} from {}",
                    approval.decided_by_username,
                    human_datetime(approval.decided_at),
                    admin_link("admin:experience_candidate_change", approval.pk, approval.pk),
                )
                if approval
                else "no approving candidate"
            )
            parts.append(
                (
                    revision.revision,
                    admin_link(
                        "admin:powercontext_artifactrevision_change", revision.record_id, "record"
                    ),
                    who,
                    _experience_block(revision.content),
                )
            )
        return format_html_join(
            "", '<div class="pc-history"><h4>Revision {} ({}) · {}</h4>{}</div>', parts
        )


def _experience_block(content: dict):
    return format_html(
        '<dl class="pc-fields">{}</dl>',
        format_html_join(
            "",
            '<dt>{}</dt><dd class="pc-text">{}</dd>',
            ((name.capitalize(), reveal(content[name])) for name in PROPOSAL_FIELDS),
        ),
    )
