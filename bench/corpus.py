"""A deterministic corpus of coding-agent memories for the benchmarks.

Facts an agent would keep about a code base: build and test commands, conventions,
decisions and their reasons, where things live, gotchas. Generated from templates and
word lists with a seeded RNG, so the same seed always gives the same texts, in order,
all distinct (Memory treats an identical active text as a no-op). Standard library only.
"""

import random
from collections.abc import Iterator

SERVICES = [
    "billing",
    "payments",
    "auth",
    "search",
    "ingest",
    "notifications",
    "gateway",
    "ledger",
    "inventory",
    "checkout",
    "reporting",
    "scheduler",
    "webhooks",
    "profile",
    "catalog",
    "shipping",
    "audit",
    "metrics",
    "exports",
    "onboarding",
    "pricing",
    "sessions",
    "storage",
    "mailer",
    "importer",
    "analytics",
    "feature_flags",
    "rate_limiter",
    "orders",
    "tenancy",
]
NOUNS = [
    "client",
    "worker",
    "handler",
    "repository",
    "serializer",
    "migration",
    "fixture",
    "cache",
    "queue",
    "adapter",
    "router",
    "middleware",
    "validator",
    "parser",
    "exporter",
    "loader",
    "scheduler",
    "mapper",
    "factory",
    "policy",
    "resolver",
    "encoder",
    "builder",
    "registry",
]
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ren",
    "tor",
    "vex",
    "zu",
    "pra",
    "sen",
    "dal",
    "qui",
    "bor",
    "nex",
    "ul",
    "fai",
    "gri",
    "hox",
    "jem",
    "wyl",
    "os",
]
TOOLS = [
    "pytest",
    "ruff",
    "mypy",
    "tox",
    "make",
    "npm",
    "pnpm",
    "cargo",
    "go test",
    "gradle",
    "docker compose",
    "terraform",
    "alembic",
    "poetry",
    "uv",
    "pre-commit",
    "black",
    "eslint",
    "vitest",
    "jest",
    "bazel",
    "helm",
    "kubectl",
    "psql",
    "redis-cli",
]
LANGS = ["Python", "TypeScript", "Go", "Rust", "Kotlin", "SQL", "Bash"]
DB = ["PostgreSQL", "SQLite", "Redis", "MySQL", "OceanBase", "DynamoDB", "Kafka", "S3"]
REASONS = [
    "the old approach deadlocked under load",
    "it halves the cold start time",
    "the vendor SDK leaks connections",
    "reviewers kept missing the edge cases",
    "CI runners have only two cores",
    "timestamps must stay timezone aware",
    "the staging data is anonymised nightly",
    "it keeps the public API backwards compatible",
    "the flaky test was caused by a shared tmp dir",
    "retries without jitter caused a thundering herd",
    "the migration locked the orders table for minutes",
    "the JSON encoder reordered keys and broke hashes",
]
ENVS = [
    "DATABASE_URL",
    "REDIS_URL",
    "SENTRY_DSN",
    "LOG_LEVEL",
    "API_TOKEN",
    "FEATURE_FLAGS",
    "S3_BUCKET",
    "SMTP_HOST",
    "WORKER_CONCURRENCY",
    "CACHE_TTL",
]

TEMPLATES = [
    "Run `{tool} {target}` before pushing changes to {service}; CI fails otherwise.",
    "The {service} {noun} lives in {path}; tests are in tests/{service}/test_{noun}.py.",
    "Decision: {service} uses {db} for the {noun} because {reason}.",
    "Convention: {lang} modules in {service} name the {noun} `{ident}` and keep it pure.",
    "Gotcha: {service} {noun} needs {env} set, or startup hangs waiting for {db}.",
    "To regenerate fixtures for {service}, run `{tool} {target}` from the repo root.",
    "Do not call the {service} {noun} directly from views; go through {ident} in {path}.",
    "The {service} build uses {tool}; the {noun} step takes about {minutes} minutes.",
    "Bug {ticket}: {service} {noun} dropped events when {db} failed over; fixed in {path}.",
    "Prefer `{ident}` over ad hoc SQL in {service}; {reason}.",
    "Release checklist for {service}: bump the version in {path}, then `{tool} {target}`.",
    "The {service} {noun} retries {retries} times with exponential backoff and jitter.",
    "Integration tests for {service} need {db} running: `docker compose up {ident}`.",
    "Owner of {service} {noun} is the {team} team; ask in #{team}-dev before refactoring.",
    "Feature flag `{ident}` gates the new {service} {noun}; default off until {ticket}.",
]
TEAMS = ["platform", "growth", "core", "data", "infra", "mobile", "identity", "payments"]
TARGETS = ["test", "lint", "check", "build", "migrate", "fixtures", "e2e", "typecheck", "-k smoke"]


def _ident(rng: random.Random) -> str:
    word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
    return f"{word}_{rng.choice(NOUNS)}"


def memories(seed: int = 28) -> Iterator[tuple[str, str]]:
    """Endless (kind, text) pairs, deterministic for ``seed``, never repeating a text."""
    rng = random.Random(seed)
    seen: set[str] = set()
    kinds = ["convention", "decision", "command", "gotcha", "note", "path"]
    while True:
        service = rng.choice(SERVICES)
        noun = rng.choice(NOUNS)
        ident = _ident(rng)
        values = {
            "service": service,
            "noun": noun,
            "ident": ident,
            "tool": rng.choice(TOOLS),
            "target": rng.choice(TARGETS),
            "lang": rng.choice(LANGS),
            "db": rng.choice(DB),
            "reason": rng.choice(REASONS),
            "env": rng.choice(ENVS),
            "path": f"src/{service}/{ident}.py",
            "minutes": rng.randint(1, 40),
            "ticket": f"PC-{rng.randint(100, 99999)}",
            "retries": rng.randint(2, 9),
            "team": rng.choice(TEAMS),
        }
        text = rng.choice(TEMPLATES).format(**values)
        if text in seen:
            continue
        seen.add(text)
        yield rng.choice(kinds), text
