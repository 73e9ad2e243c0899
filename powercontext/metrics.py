"""Privacy-safe server metrics (RFC 0028, "Persistence and privacy"), for Prometheus.

What is recorded, and nothing else:

- every HTTP request: its latency by operation (the route *pattern*, never the path with
  its values), method and status class; for an error response, its error code;
- every Context Pack prepared: the outcome (``ready``, ``empty`` or ``error``), the search
  mode, the content byte count, and the builder's aggregate selection counts (candidates
  seen, items included, items truncated, items skipped for budget).

No label ever carries a scope, a query, a snippet, an entry or candidate id or any other
caller data: every label value is taken from a closed set (route patterns come from the
URLconf, error codes from the API's error classes, ``powercontext.api.errors.error_codes``;
unknown methods and codes become ``other``), so a caller cannot create a series either.

The metrics live in one registry owned by the application (``REGISTRY``), not in
prometheus_client's global default one: a scrape shows PowerContext's metrics only (no
process or platform collectors that some other import registered), and tests can read it
without interference. ``/metrics`` (``server.metrics_view``) serves it.

Processes: ``manage.py serve`` is one waitress process whose worker threads share these
in-memory metrics (prometheus_client's metrics are thread-safe), so one scrape sees every
request the server answered since it started. A deployment running several server
processes would scrape each one (prometheus_client's multiprocess mode is not set up); the
counters start again from zero when a process restarts, which Prometheus's ``rate()``
handles.
"""

from prometheus_client import CollectorRegistry, Counter, Histogram

from powercontext.api.errors import error_codes

REGISTRY = CollectorRegistry(auto_describe=True)

# An error response without the API's error shape (an admin page, a health check's 503).
OTHER = "other"
UNMATCHED = "<unmatched>"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

PREPARE_OUTCOMES = ("ready", "empty", "error")
# How a Context Pack searched: hybrid when the prompt could be embedded, else fts.
PREPARE_SEARCH_MODES = ("fts", "hybrid")

http_request_duration = Histogram(
    "powercontext_http_request_duration_seconds",
    "Time to answer an HTTP request, by operation (route pattern), method and status class.",
    ["operation", "method", "status_class"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)
http_errors = Counter(
    "powercontext_http_errors",
    "Error responses (status 400 and above), by operation (route pattern) and error code.",
    ["operation", "code"],
    registry=REGISTRY,
)
prepare_requests = Counter(
    "powercontext_prepare",
    "Context Packs prepared, by outcome (ready, empty, error) and search mode.",
    ["outcome", "search_mode"],
    registry=REGISTRY,
)
prepare_content_bytes = Histogram(
    "powercontext_prepare_content_bytes",
    "UTF-8 bytes of the content of each prepared Context Pack (0 when empty).",
    buckets=(0, 512, 1024, 2048, 4096, 8000, 16384, 32768),
    registry=REGISTRY,
)
prepare_candidates_seen = Counter(
    "powercontext_prepare_candidates_seen",
    "Candidates (Memory and Experience hits after windowing) the builder considered.",
    registry=REGISTRY,
)
prepare_items_included = Counter(
    "powercontext_prepare_items_included",
    "Items included in prepared Context Packs.",
    registry=REGISTRY,
)
prepare_items_truncated = Counter(
    "powercontext_prepare_items_truncated",
    "Included items whose content was truncated to fit.",
    registry=REGISTRY,
)
prepare_items_skipped_for_budget = Counter(
    "powercontext_prepare_items_skipped_for_budget",
    "Candidates left out because no allowed form of them fitted the byte budget.",
    registry=REGISTRY,
)

# The closed label sets exist from the start, so a scrape shows them at zero.
for _outcome in PREPARE_OUTCOMES:
    for _mode in PREPARE_SEARCH_MODES:
        prepare_requests.labels(outcome=_outcome, search_mode=_mode)


def method_label(method: str) -> str:
    """The request method as logged and labelled: the client's own token only when it is
    a known method, so a caller cannot create a series (or write a log line's word)."""
    return method if method in METHODS else OTHER


def status_class(status: int) -> str:
    return f"{status // 100}xx" if 100 <= status <= 599 else OTHER


def observe_request(
    *, operation: str, method: str, status: int, seconds: float, error_code: str | None
) -> None:
    """One answered request. ``operation`` must be a route pattern (or ``UNMATCHED``),
    never a path; ``error_code`` is the API error body's code, when it has one."""
    http_request_duration.labels(
        operation=operation,
        method=method_label(method),
        status_class=status_class(status),
    ).observe(seconds)
    if status >= 400:
        code = error_code if error_code in error_codes() else OTHER
        http_errors.labels(operation=operation, code=code).inc()


def observe_prepared(
    *,
    status: str,
    content_bytes: int,
    candidates_seen: int,
    items_included: int,
    items_truncated: int,
    items_skipped_for_budget: int,
    search_mode: str,
) -> None:
    """One Context Pack prepared (``status`` is ``ready`` or ``empty``)."""
    prepare_requests.labels(outcome=status, search_mode=search_mode).inc()
    prepare_content_bytes.observe(content_bytes)
    prepare_candidates_seen.inc(candidates_seen)
    prepare_items_included.inc(items_included)
    prepare_items_truncated.inc(items_truncated)
    prepare_items_skipped_for_budget.inc(items_skipped_for_budget)


def observe_prepare_failed(search_mode: str) -> None:
    """A Context Pack that could not be prepared (the request answers an error)."""
    prepare_requests.labels(outcome="error", search_mode=search_mode).inc()
