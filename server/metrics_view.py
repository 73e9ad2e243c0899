"""``GET /metrics``: the privacy-safe metrics (``powercontext.metrics``) for Prometheus.

Behind the agents' bearer token like every ``/v1/`` operation (when
``POWERCONTEXT_API_TOKEN`` is set): the numbers say how much the server is used. Not in
the OpenAPI document, since its body is Prometheus's text format, not JSON.
"""

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from prometheus_client.exposition import choose_encoder
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from powercontext.api.auth import Role
from powercontext.api.views import ApiView
from powercontext.metrics import REGISTRY


class MetricsView(ApiView):
    operation = "metrics"
    role = Role.READ

    @extend_schema(exclude=True)
    def get(self, request: Request) -> HttpResponse:
        # Prometheus's own negotiation: OpenMetrics when the scraper asks for it, else the
        # classic text format (version 0.0.4).
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        return HttpResponse(encoder(REGISTRY), content_type=content_type)

    def perform_content_negotiation(
        self, request: Request, force: bool = False
    ) -> tuple[BaseRenderer, str]:
        # The body is negotiated above; an error (401) is JSON whatever the scraper accepts,
        # rather than a 406 for an Accept header without application/json.
        renderer = self.get_renderers()[0]
        return renderer, renderer.media_type
