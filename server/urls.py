from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from contextpack.preview import pack_preview
from powercontext.api.schema import CachedSchemaView
from server import home, system
from server.mcp.http import mcp_view
from server.metrics_view import MetricsView

# The admin is the desk of PowerContext, on every page: the login, the index, the
# one-time set-password pages (not admin views, so they are told too) and the title bar.
BRAND = {"site_header": "PowerContext", "site_title": "PowerContext"}
admin.site.site_header = BRAND["site_header"]
admin.site.site_title = BRAND["site_title"]
admin.site.index_title = "Review desk"

v1 = [
    path("capabilities", system.CapabilitiesView.as_view()),
    path("sources/content", system.SourceContentView.as_view()),
    path("", include("memory.urls")),
    path("", include("contextpack.urls")),
    path("", include("experience.urls")),
]

urlpatterns = [
    path("", home.home, name="home"),
    path("health/live", system.HealthLiveView.as_view()),
    path("health/ready", system.HealthReadyView.as_view()),
    path("v1/", include(v1)),
    path("metrics", MetricsView.as_view()),
    # The MCP tools over Streamable HTTP (server.mcp.http), through the same edge as /v1/.
    path("mcp", mcp_view),
    path("api/schema/", CachedSchemaView.as_view(), name="schema"),
    # The split view serves its start-up script as a file (``?script``), not inline, so
    # the page runs under a script-src 'self' policy (CONTENT_SECURITY_POLICY in settings).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="swagger-ui"),
    # The one-time set-password link of `manage.py reviewer --set-password-link`.
    path(
        "admin/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(extra_context=BRAND),
        name="password_reset_confirm",
    ),
    path(
        "admin/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(extra_context=BRAND),
        name="password_reset_complete",
    ),
    # The desk's pack preview (staff only; not part of the v1 API).
    path(
        "admin/contextpack/preview/",
        admin.site.admin_view(pack_preview),
        name="contextpack_preview",
    ),
    path("admin/", admin.site.urls),
]

handler404 = "powercontext.api.errors.not_found_view"
handler500 = "powercontext.api.errors.server_error_view"
