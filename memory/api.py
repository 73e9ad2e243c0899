"""HTTP operations of the Memory family (DESIGN.md §4). Each view validates, calls one
service or selector, and renders."""

from drf_spectacular.utils import extend_schema

from memory import openapi_examples as examples
from memory import rendering, selectors, services
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
from powercontext.api.auth import Role
from powercontext.api.openapi_examples import AGENT_ONLY
from powercontext.api.redacted import redacted_header_parameter, with_redactions
from powercontext.api.schema import responses, success
from powercontext.api.views import ApiView

TAGS = ["memory"]


class MemoryRememberView(ApiView):
    operation = "remember_memory"
    role = Role.WRITE
    input_serializer = MemoryRememberInput
    render = staticmethod(rendering.write_result)

    @extend_schema(
        operation_id="remember_memory",
        parameters=[redacted_header_parameter(200)],
        tags=TAGS,
        request=MemoryRememberInput,
        responses=responses(
            {
                200: success(
                    MemoryWriteOutput,
                    "The scope's Memory head and the new entry (`null` when nothing changed).",
                    examples.REMEMBER_RESPONSE,
                    examples.REMEMBER_NOOP,
                )
            },
            403,
            409,
            examples={
                403: [AGENT_ONLY],
                409: [examples.REMEMBER_CONFLICT],
                422: [examples.REMEMBER_INVALID],
            },
        ),
        examples=[examples.REMEMBER_REQUEST],
        description="Remember a new entry in the scope's Memory: a new Memory revision "
        "whose citation names the entry's first version. An identical active entry makes "
        "this a no-op (`entry: null`, no new revision). Secrets in `text` and `reason` "
        "(API keys, tokens, passwords, private keys) are stored as typed markers such as "
        "`[redacted:github-token]`, and the `PowerContext-Redacted` header counts them. "
        "Errors: 403 `permission_denied` for a person's token (writes are the agent's); "
        "409 `revision_conflict` when "
        "`expected_revision` is given and the head has moved on; 422 `invalid_request` "
        "for a bad field (`text` is NFC-normalised, trimmed, then 1 to 8192 UTF-8 bytes).",
    )
    def post(self, request):
        return self.operate()

    @staticmethod
    def perform(data):
        return services.memory_remember(
            scope_id=data["scope_id"],
            kind=data["kind"],
            text=data["text"],
            reason=data.get("reason"),
            expected_revision=data.get("expected_revision"),
        )


class MemorySearchView(ApiView):
    operation = "search_memory"
    role = Role.READ
    input_serializer = MemorySearchInput
    render = staticmethod(rendering.search_result)

    @extend_schema(
        operation_id="search_memory",
        tags=TAGS,
        request=MemorySearchInput,
        responses=responses(
            {
                200: success(
                    MemorySearchOutput,
                    "The hits, best first, each with the citation of the version found.",
                    examples.SEARCH_RESPONSE,
                )
            },
            examples={422: [examples.SEARCH_UNSUPPORTED]},
        ),
        examples=[examples.SEARCH_REQUEST],
        description="Search of the active entries at the scope's Memory head: by the "
        "query's words (`fts`), its meaning (`vector`) or both fused (`hybrid`); `auto`, "
        "the default, is `hybrid` once the vector index is ready and `fts` otherwise, and "
        "the response's `mode` says which ran. An empty scope answers `memory: null` and "
        "no hits. Errors: 422 `capability_not_supported` for `vector` or `hybrid` while "
        "the vector index is not ready (`GET /v1/capabilities` lists the modes offered "
        "now, `/health/ready` says why); 422 `invalid_request` for a bad field.",
    )
    def post(self, request):
        return self.operate()

    @staticmethod
    def perform(data):
        return selectors.memory_search(
            scope_id=data["scope_id"],
            query=data["query"],
            limit=data["limit"],
            mode=data["mode"],
        )


class MemoryEntriesListView(ApiView):
    operation = "list_memory_entries"
    role = Role.READ
    input_serializer = MemoryEntriesListInput
    render = staticmethod(rendering.entry_page)

    @extend_schema(
        operation_id="list_memory_entries",
        tags=TAGS,
        request=MemoryEntriesListInput,
        responses=responses(
            {
                200: success(
                    MemoryEntriesListOutput,
                    "A page of entries at the head; `next_cursor` fetches the next one.",
                    examples.LIST_RESPONSE,
                )
            }
        ),
        examples=[examples.LIST_REQUEST],
        description="The entries at the scope's Memory head, ordered by entry id, active only "
        "unless `include_inactive`. A page holds at most `limit` entries and stops before the "
        "entry that would take its entries past 1 MiB (text, kind and references, as this "
        "response's JSON carries them, escapes included); it always holds at least one "
        "entry. Pass `next_cursor` back as `cursor` (with the same filters) until it is "
        "`null`; the next page is read at the same "
        "revision. Errors: 422 `invalid_request` for a bad field or a cursor issued for other "
        "filters or another scope.",
    )
    def post(self, request):
        return self.operate()

    @staticmethod
    def perform(data):
        return selectors.memory_entries_list(
            scope_id=data["scope_id"],
            include_inactive=data["include_inactive"],
            limit=data["limit"],
            cursor=data.get("cursor"),
        )


class MemoryEntryGetView(ApiView):
    operation = "get_memory_entry"
    role = Role.READ
    input_serializer = MemoryEntryGetInput
    render = staticmethod(rendering.entry)

    @extend_schema(
        operation_id="get_memory_entry",
        tags=TAGS,
        request=MemoryEntryGetInput,
        responses=responses(
            {
                200: success(
                    MemoryEntrySchema,
                    "The cited entry version and its state in the cited revision.",
                    examples.GET_RESPONSE,
                )
            },
            404,
            examples={404: [examples.GET_NOT_FOUND]},
        ),
        examples=[examples.GET_REQUEST],
        description="The exact entry version the citation names, with its state in the "
        "cited revision, even after the entry was revised or retired: a citation in a "
        "Context Pack can always be checked. Errors: 404 `artifact_not_found` when the "
        "cited Memory revision does not exist in the scope, `memory_not_found` when it "
        "does not hold that entry version; 422 `invalid_request` for a bad field.",
    )
    def post(self, request):
        return self.operate()

    @staticmethod
    def perform(data):
        return selectors.memory_entry_get(
            scope_id=data["scope_id"], citation=Citation.from_payload(data["citation"])
        )


class MemoryEntryReviseView(ApiView):
    operation = "revise_memory_entry"
    role = Role.WRITE
    input_serializer = MemoryEntryReviseInput
    render = staticmethod(rendering.write_result)

    @extend_schema(
        operation_id="revise_memory_entry",
        parameters=[redacted_header_parameter(200)],
        tags=TAGS,
        request=MemoryEntryReviseInput,
        responses=responses(
            {
                200: success(
                    MemoryWriteOutput,
                    "The new head and the entry's new version (`null` when kind and text "
                    "are unchanged).",
                    examples.REVISE_RESPONSE,
                )
            },
            403,
            404,
            409,
            examples={403: [AGENT_ONLY], 409: [examples.STALE_CITATION]},
        ),
        examples=[examples.REVISE_REQUEST],
        description="A new version of an active entry (same `entry_id`), in a new Memory "
        "revision; the old version stays citable. Errors: 403 `permission_denied` for a "
        "person's token; 404 when the citation names nothing; 409 `revision_conflict` "
        "when the citation is not the entry's current version (someone revised it since "
        "you read it), `memory_entry_inactive` when the entry is retired; 422 "
        "`invalid_request` for a bad field.",
    )
    def post(self, request):
        return self.operate()

    @staticmethod
    def perform(data):
        return services.memory_entry_revise(
            scope_id=data["scope_id"],
            citation=Citation.from_payload(data["citation"]),
            kind=data["kind"],
            text=data["text"],
            reason=data.get("reason"),
        )


class MemoryEntryRetireView(ApiView):
    operation = "retire_memory_entry"
    role = Role.WRITE
    input_serializer = MemoryEntryStateInput
    render = staticmethod(rendering.write_result)

    @extend_schema(
        operation_id="retire_memory_entry",
        parameters=[redacted_header_parameter(200)],
        tags=TAGS,
        request=MemoryEntryStateInput,
        responses=responses(
            {
                200: success(
                    MemoryWriteOutput,
                    "The new head and the entry, now `inactive`.",
                    examples.RETIRE_RESPONSE,
                )
            },
            403,
            404,
            409,
            examples={403: [AGENT_ONLY], 409: [examples.STALE_CITATION, examples.ENTRY_INACTIVE]},
        ),
        examples=[examples.RETIRE_REQUEST],
        description="Retire an active entry: a new Memory revision where it is "
        "`inactive`, so search and Context Packs leave it out; its versions stay "
        "citable and `reactivate` brings it back. Errors: 403 `permission_denied` for a "
        "person's token; 404 when the citation names nothing; 409 `revision_conflict` "
        "for a superseded citation, `memory_entry_inactive` when already retired; 422 "
        "`invalid_request` for a bad field.",
    )
    def post(self, request):
        return self.operate()

    @staticmethod
    def perform(data):
        return services.memory_entry_retire(
            scope_id=data["scope_id"],
            citation=Citation.from_payload(data["citation"]),
            reason=data.get("reason"),
        )


class MemoryEntryReactivateView(ApiView):
    operation = "reactivate_memory_entry"
    role = Role.WRITE

    @extend_schema(
        operation_id="reactivate_memory_entry",
        parameters=[redacted_header_parameter(200)],
        tags=TAGS,
        request=MemoryEntryStateInput,
        responses=responses(
            {
                200: success(
                    MemoryWriteOutput,
                    "The new head and the entry, `active` again (`null` when it already was).",
                    examples.REACTIVATE_RESPONSE,
                )
            },
            403,
            404,
            409,
            examples={403: [AGENT_ONLY], 409: [examples.STALE_CITATION]},
        ),
        examples=[examples.REACTIVATE_REQUEST],
        description="Bring a retired entry back (at the version it was retired with) in a "
        "new Memory revision; an entry that is already active is a no-op (`entry: null`). "
        "Errors: 403 `permission_denied` for a person's token; 404 when the citation "
        "names nothing; 409 `revision_conflict` for a superseded citation; 422 "
        "`invalid_request` for a bad field.",
    )
    def post(self, request):
        data = self.validated(MemoryEntryStateInput)
        result = services.memory_entry_reactivate(
            scope_id=data["scope_id"],
            citation=Citation.from_payload(data["citation"]),
            reason=data.get("reason"),
        )
        return with_redactions(self.respond(rendering.write_result(result)), result)


class MemoryChangesView(ApiView):
    operation = "memory_changes"
    role = Role.READ

    @extend_schema(
        operation_id="memory_changes",
        tags=TAGS,
        request=MemoryChangesInput,
        responses=responses(
            {
                200: success(
                    MemoryChangesOutput,
                    "The revisions after `since_revision`, oldest first, with their changes "
                    "and reasons.",
                    examples.CHANGES_RESPONSE,
                )
            }
        ),
        examples=[examples.CHANGES_REQUEST],
        description="What changed in the scope's Memory after `since_revision`: each "
        "revision's adds, revisions, retirements (`deactivate`) and reactivations with "
        "the reason given. Poll with `since_revision` = the last `next_since` to follow "
        "a scope. Errors: 422 `invalid_request` for a bad field.",
    )
    def post(self, request):
        data = self.validated(MemoryChangesInput)
        found = selectors.memory_changes(
            scope_id=data["scope_id"],
            since_revision=data["since_revision"],
            limit=data["limit"],
        )
        return self.respond(rendering.changes(found))
