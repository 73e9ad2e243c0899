"""The reviewer's desk (DESIGN.md §8): the queue of candidates, a detail page with the
proposal beside its evidence, and approve / reject / revise, each behind a confirmation
step. The actions call the same services as the HTTP API and report their domain errors
as messages. Staff with the view permission but not ``experience.review_candidate`` see
everything and can decide nothing. Approved Experience is browsable, read-only.
"""

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import Count, OuterRef, Subquery
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from experience import services
from experience.models import Candidate, CandidateStatus, CandidateVersion
from experience.selectors import current_version, proposal_of
from experience.values import (
    EXPERIENCE_FAMILY,
    PROPOSAL_FIELD_MAX_CHARS,
    PROPOSAL_FIELDS,
    REASON_MAX_CHARS,
    Proposal,
)
from memory.admin import ReadOnlyAdmin, excerpt
from powercontext.artifacts import revision_content
from powercontext.exceptions import PowerContextError
from powercontext.models import ArtifactRevision, SourceRecord

from .models import Experience

# -- the queue ------------------------------------------------------------------------


class StatusFilter(admin.SimpleListFilter):
    """Pending by default: the queue is what still needs a decision."""

    title = "status"
    parameter_name = "status"
    ALL = "all"

    def lookups(self, request, model_admin):
        return [*CandidateStatus.choices, (self.ALL, "All")]

    def choices(self, changelist):
        current = self.value() or CandidateStatus.PENDING
        for lookup, title in self.lookup_choices:
            yield {
                "selected": current == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        value = self.value() or CandidateStatus.PENDING
        if value == self.ALL:
            return queryset
        return queryset.filter(status=value)


class ScopeFilter(admin.SimpleListFilter):
    title = "scope"
    parameter_name = "scope"

    def lookups(self, request, model_admin):
        scopes = Candidate.objects.order_by("scope_id").values_list("scope_id", flat=True)
        return [(scope, scope) for scope in scopes.distinct()]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset if value is None else queryset.filter(scope_id=value)


def _status_counts(queryset) -> dict[str, int]:
    counts = dict.fromkeys(CandidateStatus.values, 0)
    for row in queryset.order_by().values("status").annotate(n=Count("pk")):
        counts[row["status"]] = row["n"]
    return counts


# -- forms of the decisions -----------------------------------------------------------


class DecisionForm(forms.Form):
    # The version the reviewer saw: a newer one is a conflict, not a silent approval.
    expected_version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class RejectForm(DecisionForm):
    reason = forms.CharField(
        max_length=REASON_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        help_text="Required: why this is not a lesson worth recalling.",
    )


def _proposal_field() -> forms.CharField:
    return forms.CharField(
        max_length=PROPOSAL_FIELD_MAX_CHARS,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
    )


class ReviseForm(DecisionForm):
    situation = _proposal_field()
    action = _proposal_field()
    outcome = _proposal_field()
    lesson = _proposal_field()
    reason = forms.CharField(
        max_length=REASON_MAX_CHARS,
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        help_text="Optional; left empty keeps the proposal's reason.",
    )
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        for name in PROPOSAL_FIELDS:
            if name in data and not data[name].strip():
                self.add_error(name, "Must contain a non-space character.")
        return data


# -- the candidate pages --------------------------------------------------------------


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = (
        "candidate_id",
        "lesson_excerpt",
        "scope_id",
        "status",
        "version",
        "created_at",
        "decided_by_username",
    )
    list_display_links = ("candidate_id", "lesson_excerpt")
    list_filter = (StatusFilter, ScopeFilter)
    search_fields = ("=candidate_id", "=scope_id")
    ordering = ("-created_at", "candidate_id")
    show_facets = admin.ShowFacets.ALWAYS
    change_list_template = "admin/experience/candidate/change_list.html"
    list_per_page = 50

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

    @admin.display(description="lesson")
    def lesson_excerpt(self, obj):
        return excerpt(obj.current_lesson or "")

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
            "can_decide": services.can_review(request.user)
            and candidate.status == CandidateStatus.PENDING,
            "detail_url": reverse("admin:experience_candidate_change", args=[quote(candidate.pk)]),
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
        if not services.can_review(request.user):
            raise DjangoPermissionDenied
        return candidate

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
        return HttpResponseRedirect(
            reverse("admin:experience_candidate_change", args=[quote(candidate.pk)])
        )

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
        second (``confirmed``) writes it."""
        candidate = self._decision(request, object_id)
        version = current_version(candidate)
        initial = {
            "expected_version": candidate.version,
            **proposal_of(version).as_payload(),
            "reason": version.reason or "",
        }
        form = ReviseForm(request.POST or None, initial=initial)
        stage = "edit"
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            if data["confirmed"]:
                return self._done(
                    request,
                    candidate,
                    lambda: services.candidate_revise(
                        scope_id=candidate.scope_id,
                        candidate_id=candidate.candidate_id,
                        expected_version=data["expected_version"],
                        proposal=Proposal(**{name: data[name] for name in PROPOSAL_FIELDS}),
                        reason=data["reason"] or None,
                        reviewer=request.user,
                    ),
                    f"Revised: version {data['expected_version'] + 1} is now pending review.",
                )
            stage = "confirm"
            form = ReviseForm(initial={**data, "confirmed": True})
            for field in form.fields.values():
                field.widget = forms.HiddenInput()
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


def _admin_link(viewname: str, pk: Any, label: str):
    return format_html('<a href="{}">{}</a>', reverse(viewname, args=[quote(pk)]), label)


def _source_evidence(scope_id: str, ref: dict) -> dict[str, Any]:
    record = SourceRecord.objects.filter(
        scope_id=scope_id, source_type=ref["name"], source_id=ref["source_id"]
    ).first()
    if record is None:
        return {"ref": ref, "link": None, "preview": "not captured in this scope"}
    content = json.loads(record.payload).get("content", "")
    return {
        "ref": ref,
        "link": _admin_link(
            "admin:powercontext_sourcerecord_change", record.pk, f"{ref['name']}:{ref['source_id']}"
        ),
        "preview": excerpt(content, 400),
    }


def _artifact_evidence(scope_id: str, ref: dict) -> dict[str, Any]:
    revision = ArtifactRevision.objects.filter(
        scope_id=scope_id,
        family=ref["family"],
        artifact_id=ref["artifact_id"],
        revision=ref["revision"],
    ).first()
    label = f"{ref['family']}/{ref['artifact_id']}@{ref['revision']}"
    if revision is None:
        return {"ref": ref, "link": None, "entries": [], "preview": "no such revision"}
    entries = []
    if ref["family"] == "memory":
        from memory.models import MemoryEntryVersion

        changed = [
            change["to_entry_version_id"] or change["from_entry_version_id"]
            for change in revision_content(revision).get("changes", [])
        ]
        entries = [
            {
                "link": _admin_link("admin:memory_memoryentryversion_change", v.pk, v.entry_id),
                "text": excerpt(v.text, 400),
            }
            for v in MemoryEntryVersion.objects.filter(entry_version_id__in=changed)
        ]
    return {
        "ref": ref,
        "link": _admin_link("admin:powercontext_artifactrevision_change", revision.pk, label),
        "entries": entries,
        "preview": "",
    }


def _experience_link(scope_id: str, artifact_id: str | None, revision: int | None):
    if artifact_id is None:
        return None
    head = Experience.objects.filter(scope_id=scope_id, artifact_id=artifact_id).first()
    label = f"{EXPERIENCE_FAMILY}/{artifact_id}@{revision}"
    if head is None:
        return label
    return _admin_link("admin:experience_experience_change", head.pk, label)


# -- approved Experience ---------------------------------------------------------------


@admin.register(Experience)
class ExperienceAdmin(ReadOnlyAdmin):
    list_display = ("artifact_id", "lesson", "revision", "scope_id", "updated_at")
    search_fields = ("=artifact_id", "=scope_id")
    ordering = ("-updated_at", "artifact_id")
    fields = ("artifact_id", "scope_id", "revision", "updated_at", "current", "history")
    readonly_fields = ("current", "history")

    def get_queryset(self, request):
        content = ArtifactRevision.objects.filter(
            scope_id=OuterRef("scope_id"),
            family=EXPERIENCE_FAMILY,
            artifact_id=OuterRef("artifact_id"),
            revision=OuterRef("revision"),
        ).values("content")[:1]
        return super().get_queryset(request).annotate(head_content=Subquery(content))

    @admin.display(description="lesson")
    def lesson(self, obj):
        return excerpt(json.loads(obj.head_content)["lesson"]) if obj.head_content else "-"

    @admin.display(description="current revision")
    def current(self, obj):
        return _experience_block(json.loads(obj.head_content))

    @admin.display(description="history")
    def history(self, obj):
        revisions = ArtifactRevision.objects.filter(
            scope_id=obj.scope_id, family=EXPERIENCE_FAMILY, artifact_id=obj.artifact_id
        ).order_by("-revision")
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
                    "approved by {} at {} from {}",
                    approval.decided_by_username,
                    approval.decided_at,
                    _admin_link("admin:experience_candidate_change", approval.pk, approval.pk),
                )
                if approval
                else "no approving candidate"
            )
            parts.append(
                format_html(
                    "<div><h4>Revision {} ({}) · {}</h4>{}</div>",
                    revision.revision,
                    _admin_link(
                        "admin:powercontext_artifactrevision_change", revision.pk, "record"
                    ),
                    who,
                    _experience_block(revision_content(revision)),
                )
            )
        return format_html("{}", format_html("".join(["{}"] * len(parts)), *parts))


def _experience_block(content: dict):
    rows = "".join(["<dt>{}</dt><dd style='white-space:pre-wrap'>{}</dd>"] * len(PROPOSAL_FIELDS))
    values = []
    for name in PROPOSAL_FIELDS:
        values += [name.capitalize(), content[name]]
    return format_html("<dl>" + rows + "</dl>", *values)
