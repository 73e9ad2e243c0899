"""``GET /metrics``: privacy-safe Prometheus metrics (RFC 0028, "Persistence and privacy").

A scrape after a run of operations must show per-operation latency, error categories,
prepare outcomes, content bytes, the search mode and the aggregate selection counts, and
must never show a scope, query, snippet, path value or id.
"""

import io
import logging
import re

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families

from experience import exceptions as experience_exceptions
from memory import exceptions as memory_exceptions
from powercontext import exceptions, metrics
from powercontext.api.errors import error_codes
from tests.conftest import ApiClient, error_code

pytestmark = pytest.mark.django_db

TOKEN = "agent-secret-token"
# An identifier (a digit): both entries hold the anchor the prompt names, so the focus rule
# keeps the long one too.
MARK = "zqxmetric7"
SCOPE = f"scope-{MARK}"
IDS = re.compile(r"(mem_ent_|mem_ver_|cand_|exp_)[0-9a-f]{32}")
PREPARE = "/v1/context/prepare"
ALLOWED_LABELS = {"operation", "method", "status_class", "code", "outcome", "search_mode", "le"}


@pytest.fixture
def token_required(settings):
    settings.POWERCONTEXT_API_TOKEN = TOKEN


@pytest.fixture
def agent(client, token_required):
    return ApiClient(client, TOKEN)


def scrape(api) -> tuple[str, dict[tuple[str, tuple], float]]:
    """The exposition text and its samples as {(name, sorted labels): value}."""
    response = api.get("/metrics")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    text = response.content.decode()
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    return text, samples


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before, after, name, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def run_operations(api, monkeypatch):
    """Operations with markers in every field, a prepare of each outcome, and errors."""
    api.ok("/v1/memory/remember", {"scope_id": SCOPE, "kind": MARK, "text": f"{MARK} deploy"})
    api.ok(
        "/v1/memory/remember",
        # Longer than an item's 2000-byte cap: included truncated. Words of their own, so
        # that it does not say what the first entry says (it would take the same slot).
        {
            "scope_id": SCOPE,
            "kind": MARK,
            "text": f"{MARK} deploy " + "release notes and changelog entries " * 90,
        },
    )
    api.ok("/v1/memory/search", {"scope_id": SCOPE, "query": f"{MARK} deploy"})
    ready = api.ok(PREPARE, {"scope_id": SCOPE, "query": f"{MARK} deploy", "max_bytes": 8000})
    assert ready["status"] == "ready"
    empty = api.ok(PREPARE, {"scope_id": SCOPE, "query": "nothing matches this", "max_bytes": 512})
    assert empty["status"] == "empty"
    # 422 and 401 before prepare runs: not prepare outcomes.
    assert api.post(PREPARE, {"scope_id": SCOPE, "query": " "}).status_code == 422
    assert ApiClient(api.client, "wrong").post(PREPARE, {}).status_code == 401
    assert api.post(f"/v1/{MARK}/{SCOPE}", {}).status_code == 404

    def failing(**kwargs):
        raise RuntimeError(kwargs["query"].terms)

    with monkeypatch.context() as patch:
        patch.setattr("contextpack.application.memory_search_at", failing)
        failed = api.post(PREPARE, {"scope_id": SCOPE, "query": f"{MARK} deploy"})
    assert failed.status_code == 500
    return ready


def test_scrape_after_a_run_has_latency_errors_and_prepare_counts(agent, monkeypatch):
    _, before = scrape(agent)
    ready = run_operations(agent, monkeypatch)
    _, after = scrape(agent)

    latency = "powercontext_http_request_duration_seconds_count"
    route = {"operation": PREPARE, "method": "POST"}
    assert delta(before, after, latency, **route, status_class="2xx") == 2
    assert delta(before, after, latency, **route, status_class="4xx") == 2
    assert delta(before, after, latency, **route, status_class="5xx") == 1
    remember = {"operation": "/v1/memory/remember", "method": "POST", "status_class": "2xx"}
    assert delta(before, after, latency, **remember) == 2
    assert (
        delta(
            before,
            after,
            "powercontext_http_request_duration_seconds_bucket",
            **remember,
            le="+Inf",
        )
        == 2
    )
    # The previous scrape itself was timed too.
    assert (
        delta(before, after, latency, operation="/metrics", method="GET", status_class="2xx") == 1
    )

    errors = "powercontext_http_errors_total"
    assert delta(before, after, errors, operation=PREPARE, code="invalid_request") == 1
    assert delta(before, after, errors, operation=PREPARE, code="unauthorized") == 1
    assert delta(before, after, errors, operation=PREPARE, code="internal_error") == 1
    assert delta(before, after, errors, operation="<unmatched>", code="not_found") == 1

    outcomes = "powercontext_prepare_total"
    assert delta(before, after, outcomes, outcome="ready", search_mode="hybrid") == 1
    assert delta(before, after, outcomes, outcome="empty", search_mode="hybrid") == 1
    assert delta(before, after, outcomes, outcome="error", search_mode="hybrid") == 1

    content = "powercontext_prepare_content_bytes"
    assert delta(before, after, content + "_count") == 2
    assert delta(before, after, content + "_sum") == ready["content_bytes"]
    assert delta(before, after, content + "_bucket", le="0.0") == 1  # the empty one

    assert delta(before, after, "powercontext_prepare_candidates_seen_total") == 2
    assert delta(before, after, "powercontext_prepare_items_included_total") == 2
    assert delta(before, after, "powercontext_prepare_items_truncated_total") == 1
    assert delta(before, after, "powercontext_prepare_items_skipped_for_budget_total") == 0


def test_a_pack_too_small_for_its_items_counts_them_as_skipped(agent):
    for word in ("alpha", "beta", "gamma"):
        text = " ".join([word] * 60)
        agent.ok("/v1/memory/remember", {"scope_id": SCOPE, "kind": "k", "text": text})
    _, before = scrape(agent)
    prepared = agent.ok(PREPARE, {"scope_id": SCOPE, "query": "alpha beta gamma", "max_bytes": 512})
    _, after = scrape(agent)
    seen = delta(before, after, "powercontext_prepare_candidates_seen_total")
    included = delta(before, after, "powercontext_prepare_items_included_total")
    skipped = delta(before, after, "powercontext_prepare_items_skipped_for_budget_total")
    assert seen == 3
    assert skipped >= 1
    assert included + skipped == seen
    assert (included > 0) == (prepared["status"] == "ready")


def test_the_scrape_never_names_a_scope_query_snippet_path_or_id(agent, monkeypatch):
    run_operations(agent, monkeypatch)
    agent.ok("/v1/memory/entries/list", {"scope_id": SCOPE})
    assert agent.client.generic("BREW", "/v1/memory/search").status_code in (401, 405)
    text, samples = scrape(agent)
    assert MARK not in text
    assert "deploy" not in text
    assert IDS.search(text) is None
    label_names = {name for _, labels in samples for name, _ in labels}
    assert label_names <= ALLOWED_LABELS
    for (name, labels), _ in samples.items():
        assert name.startswith("powercontext_"), name
        for label, label_value in labels:
            if label == "operation":
                # A route pattern from the URLconf, never a path with values.
                assert label_value == "<unmatched>" or label_value.startswith("/"), label_value
            elif label == "method":
                assert label_value in metrics.METHODS | {"other"}
            elif label == "code":
                assert label_value in error_codes() | {"other"}
            elif label == "outcome":
                assert label_value in metrics.PREPARE_OUTCOMES
            elif label == "search_mode":
                assert label_value in metrics.PREPARE_SEARCH_MODES
            elif label == "status_class":
                assert re.fullmatch(r"[1-5]xx", label_value)
    assert (
        value(
            samples,
            "powercontext_http_request_duration_seconds_count",
            operation="/v1/memory/search",
            method="other",
            status_class="4xx",
        )
        >= 1
    )


def test_metrics_need_the_agent_token(client, token_required):
    for token in (None, "wrong", TOKEN + "x"):
        response = ApiClient(client, token).get("/metrics")
        assert response.status_code == 401
        assert error_code(response) == "unauthorized"
        assert response["WWW-Authenticate"].startswith("Bearer")
    assert ApiClient(client, TOKEN).get("/metrics").status_code == 200


def test_an_unauthorized_scrape_is_json_whatever_it_accepts(client, token_required):
    response = client.get("/metrics", HTTP_ACCEPT="text/plain")
    assert response.status_code == 401
    assert error_code(response) == "unauthorized"


def test_without_a_configured_token_local_scrapes_are_served(client):
    assert client.get("/metrics").status_code == 200


def test_openmetrics_when_the_scraper_asks_for_it(agent):
    response = agent.get(
        "/metrics", headers={"HTTP_ACCEPT": "application/openmetrics-text; version=1.0.0"}
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.decode().rstrip().endswith("# EOF")


def test_plain_text_accept_is_served_not_refused(agent):
    response = agent.get("/metrics", headers={"HTTP_ACCEPT": "text/plain"})
    assert response.status_code == 200
    assert b"powercontext_prepare_total" in response.content


def mcp_request(method: str) -> str:
    """The status line ``/mcp`` answers, through Django's whole edge as served."""
    from django.core.handlers.wsgi import WSGIHandler

    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": "/mcp",
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "127.0.0.1:8000",
        "CONTENT_LENGTH": "0",
        "wsgi.input": io.BytesIO(),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
    }
    statuses = []
    app = WSGIHandler()
    b"".join(app(environ, lambda status, headers, exc_info=None: statuses.append(status)))
    return statuses[0]


def test_mcp_refusals_are_counted_by_error_code_and_known_method(token_required):
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    access_log = logging.getLogger("powercontext.access")
    sample = metrics.REGISTRY.get_sample_value
    errors = "powercontext_http_errors_total"
    latency = "powercontext_http_request_duration_seconds_count"
    labels = [
        (errors, {"operation": "/mcp", "code": code})
        for code in ("unauthorized", "method_not_allowed", "other")
    ] + [(latency, {"operation": "/mcp", "method": "other", "status_class": "4xx"})]
    before = [sample(name, label) or 0.0 for name, label in labels]
    access_log.addHandler(handler)
    try:
        assert mcp_request("POST").startswith("401 ")
        assert mcp_request("BREW").startswith("405 ")
    finally:
        access_log.removeHandler(handler)
    after = [sample(name, label) or 0.0 for name, label in labels]
    assert [b - a for a, b in zip(before, after, strict=True)] == [1, 1, 0, 1]
    assert [line.rsplit(" ", 1)[0] for line in lines] == ["POST /mcp 401", "other /mcp 405"]


def _counted(code: str) -> float:
    return (
        metrics.REGISTRY.get_sample_value(
            "powercontext_http_errors_total", {"operation": "/v1/x", "code": code}
        )
        or 0.0
    )


def _observe(code: str, status: int) -> None:
    metrics.observe_request(
        operation="/v1/x", method="POST", status=status, seconds=0.001, error_code=code
    )


def _errors(module) -> list[type[exceptions.PowerContextError]]:
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, exceptions.PowerContextError)
    ]


@pytest.mark.parametrize(
    "error",
    sorted(
        {*_errors(exceptions), *_errors(memory_exceptions), *_errors(experience_exceptions)},
        key=lambda error: error.__name__,
    ),
    ids=lambda error: error.__name__,
)
def test_each_domain_error_is_counted_under_its_own_code(error):
    before = _counted(error.code)
    _observe(error.code, error.status)
    assert _counted(error.code) == before + 1


def test_a_new_domain_error_is_counted_by_its_class_alone_and_a_made_up_code_is_other():
    class WidgetJammed(exceptions.PowerContextError):
        code, status = "widget_jammed", 409

    assert "widget_jammed" in error_codes()
    before = _counted("widget_jammed"), _counted("other")
    _observe("widget_jammed", 409)
    _observe("made_up_by_a_caller", 409)
    assert (_counted("widget_jammed"), _counted("other")) == (before[0] + 1, before[1] + 1)


def test_the_registry_is_the_apps_own():
    assert metrics.REGISTRY is not prometheus_client.REGISTRY
    default = prometheus_client.generate_latest(prometheus_client.REGISTRY).decode()
    assert "powercontext_" not in default


def test_metrics_are_not_in_the_openapi_document(agent):
    schema = agent.client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert b"/metrics" not in schema.content
