"""HTTP operations of the Memory family (DESIGN.md §4). Each view validates, calls one
service or selector, and renders."""

from drf_spectacular.utils import extend_schema

from memory import selectors, services
from memory.serializers import (
    MemoryChangesInput,
    MemoryChangesOutput,
    MemoryEntriesListInput,
    MemoryEntriesListOutput,
    MemoryEntryGetInput,
    MemoryEntryReviseInput,
    MemoryEntrySchema,
    MemoryEntryStateInput,
    MemoryRememberInput,
    MemorySearchInput,
    MemorySearchOutput,
    MemoryWriteOutput,
)
from memory.values import Citation
from powercontext.api.schema import responses
from powercontext.api.views import ApiView

TAGS = ["memory"]


class MemoryRememberView(ApiView):
    operation = "remember_memory"

    @extend_schema(
        operation_id="remember_memory",
        tags=TAGS,
        request=MemoryRememberInput,
        responses=responses({200: MemoryWriteOutput}, 403, 409),
        description="Remember a new entry. An identical active entry makes this a no-op "
        "(`entry: null`, no new revision).",
    )
    def post(self, request):
        data = self.validated(MemoryRememberInput)
        result = services.memory_remember(
            scope_id=data["scope_id"],
            kind=data["kind"],
            text=data["text"],
            reason=data.get("reason"),
            expected_revision=data.get("expected_revision"),
        )
        return self.respond(result.as_payload())


class MemorySearchView(ApiView):
    operation = "search_memory"

    @extend_schema(
        operation_id="search_memory",
        tags=TAGS,
        request=MemorySearchInput,
        responses=responses({200: MemorySearchOutput}),
        description="Full-text search of the active entries at the head. `vector` and "
        "`hybrid` answer 422 `capability_not_supported`.",
    )
    def post(self, request):
        data = self.validated(MemorySearchInput)
        return self.respond(
            selectors.memory_search(
                scope_id=data["scope_id"],
                query=data["query"],
                limit=data["limit"],
                mode=data["mode"],
            )
        )


class MemoryEntriesListView(ApiView):
    operation = "list_memory_entries"

    @extend_schema(
        operation_id="list_memory_entries",
        tags=TAGS,
        request=MemoryEntriesListInput,
        responses=responses({200: MemoryEntriesListOutput}),
    )
    def post(self, request):
        data = self.validated(MemoryEntriesListInput)
        return self.respond(
            selectors.memory_entries_list(
                scope_id=data["scope_id"],
                include_inactive=data["include_inactive"],
                limit=data["limit"],
                cursor=data.get("cursor"),
            )
        )


class MemoryEntryGetView(ApiView):
    operation = "get_memory_entry"

    @extend_schema(
        operation_id="get_memory_entry",
        tags=TAGS,
        request=MemoryEntryGetInput,
        responses=responses({200: MemoryEntrySchema}, 404),
        description="The exact entry version the citation names, with its state in the "
        "cited revision, even after the entry was revised or retired.",
    )
    def post(self, request):
        data = self.validated(MemoryEntryGetInput)
        return self.respond(
            selectors.memory_entry_get(
                scope_id=data["scope_id"], citation=Citation.from_payload(data["citation"])
            )
        )


class MemoryEntryReviseView(ApiView):
    operation = "revise_memory_entry"

    @extend_schema(
        operation_id="revise_memory_entry",
        tags=TAGS,
        request=MemoryEntryReviseInput,
        responses=responses({200: MemoryWriteOutput}, 403, 404, 409),
    )
    def post(self, request):
        data = self.validated(MemoryEntryReviseInput)
        result = services.memory_entry_revise(
            scope_id=data["scope_id"],
            citation=Citation.from_payload(data["citation"]),
            kind=data["kind"],
            text=data["text"],
            reason=data.get("reason"),
        )
        return self.respond(result.as_payload())


class MemoryEntryRetireView(ApiView):
    operation = "retire_memory_entry"

    @extend_schema(
        operation_id="retire_memory_entry",
        tags=TAGS,
        request=MemoryEntryStateInput,
        responses=responses({200: MemoryWriteOutput}, 403, 404, 409),
    )
    def post(self, request):
        data = self.validated(MemoryEntryStateInput)
        result = services.memory_entry_retire(
            scope_id=data["scope_id"],
            citation=Citation.from_payload(data["citation"]),
            reason=data.get("reason"),
        )
        return self.respond(result.as_payload())


class MemoryEntryReactivateView(ApiView):
    operation = "reactivate_memory_entry"

    @extend_schema(
        operation_id="reactivate_memory_entry",
        tags=TAGS,
        request=MemoryEntryStateInput,
        responses=responses({200: MemoryWriteOutput}, 403, 404, 409),
    )
    def post(self, request):
        data = self.validated(MemoryEntryStateInput)
        result = services.memory_entry_reactivate(
            scope_id=data["scope_id"],
            citation=Citation.from_payload(data["citation"]),
            reason=data.get("reason"),
        )
        return self.respond(result.as_payload())


class MemoryChangesView(ApiView):
    operation = "memory_changes"

    @extend_schema(
        operation_id="memory_changes",
        tags=TAGS,
        request=MemoryChangesInput,
        responses=responses({200: MemoryChangesOutput}),
    )
    def post(self, request):
        data = self.validated(MemoryChangesInput)
        return self.respond(
            selectors.memory_changes(
                scope_id=data["scope_id"],
                since_revision=data["since_revision"],
                limit=data["limit"],
            )
        )
