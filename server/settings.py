"""Settings for PowerContext.

Everything a deployment changes comes from the environment:

- ``POWERCONTEXT_HOME``: the data directory (default: the per-user data directory).
  The SQLite database and the generated secret key live there.
- ``POWERCONTEXT_DATABASE_URL``: overrides the database (``sqlite:///path``,
  ``oceanbase://user:pass@host:2881/db``, ``oceanbase://root@localhost/db?unix_socket=...``).
- ``POWERCONTEXT_API_TOKEN``: the agents' bearer token. Unset, the server serves
  loopback only.
- ``POWERCONTEXT_ALLOWED_HOSTS``: with a token only, comma-separated host names the
  server answers besides loopback and the address it listens on (Django's
  ``ALLOWED_HOSTS`` syntax: ``.example.com`` matches subdomains too). Requests whose
  ``Host`` or ``Origin`` names anything else get 403 (``server.origin_policy``).
- ``POWERCONTEXT_SECRET_KEY``: Django's secret key; generated once and kept in the
  data directory when unset.
- ``POWERCONTEXT_SOURCE_RETENTION_DAYS``: days a captured prompt keeps its content
  before ``serve`` purges it (0 or unset: for ever).
"""

import os
from datetime import timedelta
from pathlib import Path

from server.config import data_home, database_config, secret_key, source_retention_days
from server.origin_policy import parse_allowed_hosts

# NumPy's BLAS (OpenBLAS in its wheels) runs on one thread unless the operator says
# otherwise. Its products here are small (a prompt's token rows against a candidate's,
# a query vector against a scope's): a pool of threads splitting them waits on itself
# more than it works, and far more when the cores are busy. 24 products of 70x384 by
# 384x30, 2 cores under load: 1-7 ms on one thread, 510-630 ms on OpenBLAS's default
# (bench/profile_ops.py: focus.matches, 93 of a prepare's 206 ms). Read when the library
# loads: set here, before any module imports NumPy (Django reads settings first).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The checkout (this file is server/settings.py).
BASE_DIR = Path(__file__).resolve().parents[1]

POWERCONTEXT_HOME = data_home()
SECRET_KEY = secret_key(POWERCONTEXT_HOME)
POWERCONTEXT_API_TOKEN = os.environ.get("POWERCONTEXT_API_TOKEN") or None
# Reviewers' personal bearer tokens (``manage.py reviewer_token``) resolve to Django users.
POWERCONTEXT_REVIEWER_TOKEN_FINDER = "experience.tokens.person_for_token"  # noqa: S105
# Request bodies larger than this are refused with 413 before they are parsed.
# 4 MiB: a 200,000-character source whose characters all need JSON escapes still fits.
POWERCONTEXT_MAX_BODY_BYTES = int(os.environ.get("POWERCONTEXT_MAX_BODY_BYTES", 4 * 1024 * 1024))
DATA_UPLOAD_MAX_MEMORY_SIZE = POWERCONTEXT_MAX_BODY_BYTES

POWERCONTEXT_SOURCE_RETENTION_DAYS = source_retention_days()

DEBUG = os.environ.get("POWERCONTEXT_DEBUG") == "1"
# Without a token only this machine's names are served (``manage.py serve`` refuses the
# variable then, rather than ignore it).
POWERCONTEXT_ALLOWED_HOSTS = (
    parse_allowed_hosts(os.environ.get("POWERCONTEXT_ALLOWED_HOSTS", ""))
    if POWERCONTEXT_API_TOKEN
    else []
)
# Host (and Origin) are checked first, by HostOriginMiddleware and /mcp's guard, with one
# rule (server/origin_policy.py): Django's list cannot say "127.0.0.0/8, any port"
# nor answer in the API's error shape, so it lets through what that rule accepted.
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    # First: its createsuperuser (migrate, then Django's) overrides django.contrib.auth's.
    "powercontext",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI's assets, served from this project instead of a public CDN.
    "drf_spectacular_sidecar",
    "memory",
    "experience",
    "contextpack",
    # Last: the composition root, above every family (its serve and mcp_stdio commands).
    "server",
]

MIDDLEWARE = [
    "server.middleware.RequestIdMiddleware",
    "server.middleware.AccessLogMiddleware",
    # Outside WhiteNoise and the Host check, so their responses carry the policy too.
    "server.middleware.ContentSecurityPolicyMiddleware",
    "server.middleware.HostOriginMiddleware",
    "server.middleware.BodySizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "server.login_throttle.LoginBusyMiddleware",
    # Last, as django-axes requires: it turns a locked-out login into its 429.
    "axes.middleware.AxesMiddleware",
]

# On every response Django answers (admin, API docs, JSON): scripts, styles, images and
# connections from this origin only, so no script from elsewhere runs beside a reviewer's
# session and CSRF token. Inline styles stay allowed: Swagger UI and the admin set style
# attributes; inline scripts do not (the docs page loads its start-up script as a file).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

ROOT_URLCONF = "server.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "server.wsgi.application"

DATABASES = {"default": database_config(POWERCONTEXT_HOME)}

# Admin logins (server/login_throttle.py): django-axes refuses a client address or a
# username after AXES_FAILURE_LIMIT failures, before any password hash; then at most one
# password is hashed at a time, so a flood of guesses cannot take the agents' threads.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "server.login_throttle.BoundedModelBackend",
]
# Attempts are counted in this process's memory (one serving process; a restart forgets
# them): no database write per failed guess, none beside the agents' writes on SQLite.
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_FAILURE_LIMIT = 5
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]  # either one, not the pair
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "server.login_throttle.lockout_response"
# axes.W001: a per-process cache is what is meant here (see AXES_HANDLER).
SILENCED_SYSTEM_CHECKS = ["axes.W001"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = POWERCONTEXT_HOME / "static"
# The admin's assets are served by WhiteNoise straight from the installed apps, so a
# fresh install needs no collectstatic step before `serve`.
WHITENOISE_USE_FINDERS = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_PARSER_CLASSES": ["powercontext.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["powercontext.api.renderers.CompactJSONRenderer"],
    "EXCEPTION_HANDLER": "powercontext.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "PowerContext API",
    "DESCRIPTION": (
        "Long-term, auditable memory for coding agents: versioned Memory entries with "
        "exact citations, approved Experience, and Context Packs."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        # The PowerContext-Warning header on the answers of operations that take a scope.
        "powercontext.api.schema.document_scope_warning",
    ],
    "ENUM_NAME_OVERRIDES": {
        "SearchModeEnum": ["auto", "fts", "vector", "hybrid"],
        "MatchedByEnum": ["fts"],
        "CandidateStatusEnum": ["pending", "approved", "rejected"],
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        # Django's own request logger would print paths and, on errors, request
        # details; our access log records method, route, status and latency only.
        "django.request": {"handlers": [], "level": "CRITICAL", "propagate": False},
        "django.server": {"handlers": [], "level": "CRITICAL", "propagate": False},
        # A CSRF failure is logged with the request's path, and admin paths hold
        # candidate and entry ids; the access log records the 403 by its route.
        "django.security.csrf": {"handlers": [], "level": "CRITICAL", "propagate": False},
        "powercontext": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # django-axes names the username and address of each failed login;
        # powercontext.login logs the lockouts without them.
        "axes": {"handlers": [], "level": "CRITICAL", "propagate": False},
        "waitress": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        # The MCP SDK (``/mcp``) names the tool a caller asked for at INFO, and an unknown
        # tool's name is caller data; its warnings and errors still show.
        "mcp": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}
