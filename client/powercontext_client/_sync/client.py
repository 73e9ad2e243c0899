# Generated from ../_async/client.py by scripts/unasync_client.py: do not edit; edit the
# asyncio source and run the script again.
"""The PowerContext API client, one method per HTTP operation.

The asyncio client, ``_async/client.py``, is the one source of both: ``_sync/client.py``
is generated from it by ``scripts/unasync_client.py`` (``async``/``await`` removed, asyncio
and httpx's async names swapped for their synchronous twins). Edit the asyncio source, then
run the script; ``tests/client/test_parity.py`` fails when the generated file is stale."""

import time
from typing import Any

import httpx

from powercontext_client import _core
from powercontext_client.types import (
    ArtifactCandidate,
    ArtifactCandidates,
    ArtifactRef,
    Capabilities,
    Experience,
    ExperienceProposal,
    Health,
    MemoryChanges,
    MemoryCitation,
    MemoryEntries,
    MemoryEntry,
    MemorySearch,
    MemoryWrite,
    PreparedContext,
    SourceCaptured,
    SourceReference,
)


class PowerContextClient:
    """A PowerContext API client: one method per HTTP operation (awaitable in the
    asyncio client ``AsyncPowerContextClient``, plain in ``PowerContextClient``).

    ``base_url`` defaults to ``$POWERCONTEXT_URL``, else ``http://127.0.0.1:8000``;
    ``token`` to ``$POWERCONTEXT_API_TOKEN`` (none: the local server without a token).
    ``timeout`` is in seconds (or an ``httpx.Timeout``) and applies to every call.
    Idempotent operations are retried up to ``max_retries`` times on a connection failure
    or a 503; writes never are. Errors are ``powercontext_client.errors`` exceptions.

    Use it as a context manager (``async with`` for the asyncio client), or close it
    (``aclose()`` / ``close()``); pass ``http_client`` to bring your own ``httpx`` client
    (``httpx.AsyncClient`` / ``httpx.Client``; then it is yours to close).
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        token: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = _core.DEFAULT_MAX_RETRIES,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.settings = _core.Settings.resolve(base_url, token, timeout, max_retries)
        self._owns_http = http_client is None
        # The timeout is passed with every request, so a caller's own client keeps it too.
        self._http = http_client or httpx.Client()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "PowerContextClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, name: str, payload: dict[str, Any] | None = None) -> Any:
        op = _core.OPERATIONS[name]
        headers = self.settings.headers()
        content = _core.encode(payload)
        if content is not None:
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    op.method,
                    self.settings.base_url + op.path,
                    content=content,
                    headers=headers,
                    timeout=self.settings.timeout,
                )
            except _core.RETRYABLE_TRANSPORT_ERRORS as exc:
                if _core.may_retry(op, attempt, self.settings):
                    time.sleep(_core.backoff(attempt))
                    attempt += 1
                    continue
                raise _core.transport_error(exc, op) from exc
            except httpx.HTTPError as exc:
                raise _core.transport_error(exc, op) from exc
            if _core.retryable_response(response, op):
                if _core.may_retry(op, attempt, self.settings):
                    time.sleep(_core.backoff(attempt))
                    attempt += 1
                    continue
            return _core.result(response, op)

    # -- system ----------------------------------------------------------------------

    def health_live(self) -> Health:
        return self._call("health_live")

    def health_ready(self) -> Health:
        """The readiness report; ``status`` is ``ready`` or says what is not."""
        return self._call("health_ready")

    def capabilities(self) -> Capabilities:
        return self._call("capabilities")

    def capture_content_source(
        self,
        *,
        scope_id: str,
        source_id: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> SourceCaptured:
        """Capture a content source. The same id and payload again is accepted with the
        original position; a different payload under the id is a ``Conflict``."""
        return self._call(
            "capture_content_source",
            _core.body(scope_id=scope_id, source_id=source_id, content=content, metadata=metadata),
        )

    def prepare_context(
        self, *, scope_id: str, query: str, max_bytes: int | None = None
    ) -> PreparedContext:
        """A Context Pack for ``query`` (at most ``max_bytes``, server default 8000)."""
        return self._call(
            "prepare_context", _core.body(scope_id=scope_id, query=query, max_bytes=max_bytes)
        )

    def session_context(self, *, scope_id: str, max_bytes: int | None = None) -> PreparedContext:
        """The small Context Pack for the start of a session (at most ``max_bytes``,
        server default 2000): the scope's standing commands and conventions, the subjects
        of its recent prompts, the latest approved Experience."""
        return self._call("session_context", _core.body(scope_id=scope_id, max_bytes=max_bytes))

    # -- memory ----------------------------------------------------------------------

    def remember_memory(
        self,
        *,
        scope_id: str,
        kind: str,
        text: str,
        reason: str | None = None,
        expected_revision: int | None = None,
    ) -> MemoryWrite:
        """Remember a new entry (``entry`` is None when an identical one is active).
        A stale ``expected_revision`` is a ``Conflict`` (``revision_conflict``)."""
        return self._call(
            "remember_memory",
            _core.body(
                scope_id=scope_id,
                kind=kind,
                text=text,
                reason=reason,
                expected_revision=expected_revision,
            ),
        )

    def search_memory(
        self, *, scope_id: str, query: str, limit: int | None = None, mode: str | None = None
    ) -> MemorySearch:
        return self._call(
            "search_memory", _core.body(scope_id=scope_id, query=query, limit=limit, mode=mode)
        )

    def list_memory_entries(
        self,
        *,
        scope_id: str,
        include_inactive: bool | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> MemoryEntries:
        return self._call(
            "list_memory_entries",
            _core.body(
                scope_id=scope_id, include_inactive=include_inactive, limit=limit, cursor=cursor
            ),
        )

    def get_memory_entry(self, *, scope_id: str, citation: MemoryCitation) -> MemoryEntry:
        """Exactly the cited entry version, with its state in the cited revision."""
        return self._call("get_memory_entry", _core.body(scope_id=scope_id, citation=citation))

    def revise_memory_entry(
        self,
        *,
        scope_id: str,
        citation: MemoryCitation,
        kind: str,
        text: str,
        reason: str | None = None,
    ) -> MemoryWrite:
        return self._call(
            "revise_memory_entry",
            _core.body(scope_id=scope_id, citation=citation, kind=kind, text=text, reason=reason),
        )

    def retire_memory_entry(
        self, *, scope_id: str, citation: MemoryCitation, reason: str | None = None
    ) -> MemoryWrite:
        return self._call(
            "retire_memory_entry", _core.body(scope_id=scope_id, citation=citation, reason=reason)
        )

    def reactivate_memory_entry(
        self, *, scope_id: str, citation: MemoryCitation, reason: str | None = None
    ) -> MemoryWrite:
        return self._call(
            "reactivate_memory_entry",
            _core.body(scope_id=scope_id, citation=citation, reason=reason),
        )

    def memory_changes(
        self, *, scope_id: str, since_revision: int, limit: int | None = None
    ) -> MemoryChanges:
        return self._call(
            "memory_changes",
            _core.body(scope_id=scope_id, since_revision=since_revision, limit=limit),
        )

    # -- experience ------------------------------------------------------------------

    def propose_experience(
        self,
        *,
        scope_id: str,
        proposal: ExperienceProposal,
        source_refs: list[SourceReference] | None = None,
        artifact_refs: list[ArtifactRef] | None = None,
        target: ArtifactRef | None = None,
        reason: str | None = None,
    ) -> ArtifactCandidate:
        """A pending candidate for human review (needs at least one reference)."""
        return self._call(
            "propose_experience",
            _core.body(
                scope_id=scope_id,
                proposal=proposal,
                source_refs=source_refs,
                artifact_refs=artifact_refs,
                target=target,
                reason=reason,
            ),
        )

    def get_experience(self, *, scope_id: str, artifact: ArtifactRef) -> Experience:
        return self._call("get_experience", _core.body(scope_id=scope_id, artifact=artifact))

    def list_artifact_candidates(
        self,
        *,
        scope_id: str,
        status: str | None = None,
        family: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> ArtifactCandidates:
        return self._call(
            "list_artifact_candidates",
            _core.body(scope_id=scope_id, status=status, family=family, cursor=cursor, limit=limit),
        )

    def get_artifact_candidate(
        self, *, scope_id: str, candidate_id: str, expected_version: int | None = None
    ) -> ArtifactCandidate:
        return self._call(
            "get_artifact_candidate",
            _core.body(
                scope_id=scope_id, candidate_id=candidate_id, expected_version=expected_version
            ),
        )

    def approve_artifact_candidate(
        self, *, scope_id: str, candidate_id: str, expected_version: int
    ) -> ArtifactCandidate:
        """A reviewer's decision: needs a reviewer's token (``PermissionDenied`` else)."""
        return self._call(
            "approve_artifact_candidate",
            _core.body(
                scope_id=scope_id, candidate_id=candidate_id, expected_version=expected_version
            ),
        )

    def reject_artifact_candidate(
        self, *, scope_id: str, candidate_id: str, expected_version: int, reason: str
    ) -> ArtifactCandidate:
        """A reviewer's decision: needs a reviewer's token (``PermissionDenied`` else)."""
        return self._call(
            "reject_artifact_candidate",
            _core.body(
                scope_id=scope_id,
                candidate_id=candidate_id,
                expected_version=expected_version,
                reason=reason,
            ),
        )

    def revise_artifact_candidate(
        self,
        *,
        scope_id: str,
        candidate_id: str,
        expected_version: int,
        proposal: ExperienceProposal,
        source_refs: list[SourceReference] | None = None,
        artifact_refs: list[ArtifactRef] | None = None,
        reason: str | None = None,
    ) -> ArtifactCandidate:
        """A reviewer's edit of a pending candidate (a reviewer's token)."""
        return self._call(
            "revise_artifact_candidate",
            _core.body(
                scope_id=scope_id,
                candidate_id=candidate_id,
                expected_version=expected_version,
                proposal=proposal,
                source_refs=source_refs,
                artifact_refs=artifact_refs,
                reason=reason,
            ),
        )
