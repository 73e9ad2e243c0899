#!/usr/bin/env python3
"""Check the PowerContext hook end to end and say in plain words what is wrong.

    python3 hooks/doctor.py --agent codex [--cwd DIR] [--no-hook-run]

Reads the same environment as the hook, resolves the scope the same way, calls the
server the way the hook does (``/health/live``, ``/v1/capabilities``, then one
``/v1/context/prepare`` with a probe query), looks for the installed hook in the agent's
settings, and finally runs the installed hook script itself on a probe prompt with
capture switched off (the doctor never writes to the server). Exit code 0 when all is
well, 1 when something needs fixing. Standard library only, Python 3.9+.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import install
import powercontext_hook as hook

PROBE_QUERY = "powercontext doctor probe: how is this project built, tested and deployed?"


class Report:
    def __init__(self, out) -> None:
        self.out = out
        self.problems = 0

    def ok(self, text: str) -> None:
        print("  ok    " + text, file=self.out)

    def info(self, text: str) -> None:
        print("  info  " + text, file=self.out)

    def problem(self, text: str) -> None:
        self.problems += 1
        print("  FIX   " + text, file=self.out)


def explain_status(status: int, url: str, token: bool, headers: dict) -> str:
    if status in (401, 403):
        if not token:
            return (
                f"The server wants a token (HTTP {status}) and POWERCONTEXT_API_TOKEN is not set"
                " in this environment: set it to the server's token."
            )
        return (
            f"The server rejected POWERCONTEXT_API_TOKEN (HTTP {status}): it is not the token"
            " the server was started with."
        )
    if status == 404:
        return (
            f"{url} has no /v1/context/prepare (HTTP 404): the server predates the Context Pack"
            " (upgrade it), or POWERCONTEXT_URL does not point at PowerContext."
        )
    if 300 <= status < 400:
        return (
            f"The server redirected to {headers.get('location', '?')} (HTTP {status}); the hook"
            " never follows redirects: set POWERCONTEXT_URL to the address that answers directly."
        )
    if 500 <= status < 600:
        return f"The server failed (HTTP {status}); its log says why."
    return (
        f"Unexpected HTTP {status}: POWERCONTEXT_URL may point at something that is not"
        " PowerContext (a proxy or login page)."
    )


def call(config, method: str, path: str, payload, budget: float = 5.0):
    """(status, headers, body, seconds) or (None, exception, None, seconds)."""
    started = time.monotonic()
    try:
        status, headers, body = hook.http_request(config, method, path, payload, started + budget)
    except (hook.Unavailable, hook.Invalid) as exc:
        return None, exc, None, time.monotonic() - started
    return status, headers, body, time.monotonic() - started


def check_server(config, scope_id: str, report: Report) -> None:
    url = config.url
    status, headers, body, _ = call(config, "GET", "/health/live", None)
    if status is None:
        if isinstance(headers, hook.Unavailable):
            report.problem(
                f"Nothing answers at {url} (connection refused or timed out). Is the server"
                " running? Start it with `python manage.py serve`, or set POWERCONTEXT_URL."
            )
        else:
            report.problem(f"{url} does not speak HTTP as expected (TLS or protocol error).")
        return
    if status == 200:
        report.ok(f"the server answers at {url}")
    else:
        report.info(f"GET /health/live answered HTTP {status}")

    status, headers, body, _ = call(config, "GET", "/v1/capabilities", None)
    if status == 200:
        try:
            versions = json.loads(body.decode("utf-8")).get("context_versions") or []
        except (ValueError, AttributeError):
            versions = []
        if hook.SCHEMA in versions:
            report.ok(f"the server offers {hook.SCHEMA}")
        else:
            report.problem(
                f"The server does not list {hook.SCHEMA} in /v1/capabilities context_versions:"
                " it is too old or too new for this hook."
            )
    elif status is not None:
        report.problem(explain_status(status, url, bool(config.token), headers))
        if status in (401, 403):
            return

    payload = {"scope_id": scope_id, "query": PROBE_QUERY, "max_bytes": hook.MAX_BYTES}
    status, headers, body, seconds = call(
        config, "POST", "/v1/context/prepare", payload, budget=config.budget
    )
    if status is None:
        if isinstance(headers, hook.Unavailable):
            report.problem(
                f"prepare got no answer within the hook's {config.budget:.1f} s budget: the agent"
                " would get no context. The server is overloaded or stuck."
            )
        else:
            report.problem("prepare answered with something that is not valid HTTP.")
        return
    if status != 200:
        report.problem(explain_status(status, url, bool(config.token), headers))
        return
    try:
        context_status, _, nbytes = hook.parse_prepared(body)
    except ValueError as exc:
        report.problem(
            f"prepare answered HTTP 200 but broke the prepared-context contract ({exc}); the hook"
            " ignores such answers. Is POWERCONTEXT_URL pointing at PowerContext?"
        )
        return
    if context_status == "empty":
        report.ok(
            "prepare works (%.0f ms): nothing relevant to the probe in this scope yet, which is"
            " normal for a new project" % (seconds * 1000)
        )
    else:
        report.ok(f"prepare works ({seconds * 1000:.0f} ms): a {nbytes}-byte Context Pack")


# Where each agent keeps an installed plugin (its own copy of the plugin directory), the
# file that holds the plugin's hooks, and the variable its command names the root with.
PLUGIN_CACHES = {
    "codex": ("CODEX_HOME", ".codex", "hooks/hooks.json", "${PLUGIN_ROOT}"),
    "claude": (
        "CLAUDE_CONFIG_DIR",
        ".claude",
        ".claude-plugin/plugin.json",
        "${CLAUDE_PLUGIN_ROOT}",
    ),
}


def plugin_commands(agent: str, home: str) -> list[tuple[str, str]]:
    """(file, command with the plugin root filled in) of every installed PowerContext
    plugin: <agent home>/plugins/cache/<marketplace>/powercontext/<version>/."""
    env_var, default_dir, hooks_file, variable = PLUGIN_CACHES[agent]
    base = os.environ.get(env_var) or os.path.join(home, default_dir)
    pattern = os.path.join(base, "plugins", "cache", "*", "powercontext", "*", hooks_file)
    found = []
    for path in sorted(glob.glob(pattern)):
        root = os.path.dirname(os.path.dirname(path))
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            found.append((path, ""))
            continue
        groups = (data.get("hooks") or {}).get(install.EVENT) or []
        for grp in groups:
            for entry in (grp.get("hooks") or []) if isinstance(grp, dict) else []:
                if install.is_ours(agent, entry):
                    found.append((path, entry["command"].replace(variable, root)))
    return found


def installed_commands(agent: str, home: str, project_dir: str) -> list[tuple[str, str]]:
    found = plugin_commands(agent, home)
    for scope in ("user", "project"):
        path = install.settings_path(agent, scope, home, project_dir)
        try:
            data, _ = install.load(path)
        except install.InstallError:
            found.append((path, ""))
            continue
        groups = (data.get("hooks") or {}).get(install.EVENT) or []
        for grp in groups:
            for entry in (grp.get("hooks") or []) if isinstance(grp, dict) else []:
                if install.is_ours(agent, entry):
                    found.append((path, entry["command"]))
    return found


def run_installed_hook(agent: str, command: str, cwd: str, report: Report) -> None:
    import shlex

    argv = shlex.split(command)
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "prompt": PROBE_QUERY,
        "cwd": cwd,
        "session_id": "powercontext-doctor",
        "turn_id": "powercontext-doctor",
    }
    env = dict(os.environ, POWERCONTEXT_CAPTURE="0")  # the doctor never writes
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv,
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        report.problem(f"the installed hook command could not run: {exc}")
        return
    elapsed = (time.monotonic() - started) * 1000
    if done.returncode != 0:
        report.problem(
            f"the installed hook exited with {done.returncode}"
            f" (stderr: {done.stderr.decode('utf-8', 'replace').strip()[:300]})"
        )
        return
    if done.stdout:
        report.ok(f"the installed hook injected context ({elapsed:.0f} ms wall time)")
        return
    try:
        outcome = json.loads(done.stderr.decode("utf-8").splitlines()[0])["outcome"]
    except (ValueError, IndexError, KeyError):
        report.problem(f"the installed hook printed an unreadable diagnostic: {done.stderr!r}")
        return
    if outcome == hook.EMPTY:
        report.ok(f"the installed hook ran ({elapsed:.0f} ms): outcome empty")
    else:
        report.problem(f"the installed hook ran ({elapsed:.0f} ms): outcome {outcome}")


def run(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(description="Check the PowerContext hook end to end.")
    parser.add_argument("--agent", choices=sorted(install.ENTRY_SCRIPTS), default="codex")
    parser.add_argument("--cwd", default=os.getcwd(), help="the project directory to check")
    parser.add_argument("--home", default=os.path.expanduser("~"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-hook-run", action="store_true", help="do not run the installed hook script"
    )
    args = parser.parse_args(argv)
    report = Report(out)

    print("Environment", file=out)
    config = hook.load_config(os.environ)
    if config.error:
        report.problem(config.error + " (the hook skips every call until this is fixed)")
    else:
        report.ok(f"POWERCONTEXT_URL = {config.url}")
    report.info(
        "POWERCONTEXT_API_TOKEN is %s" % ("set" if config.token else "not set (fine on loopback)")
    )
    if not config.recall:
        report.problem("recall is switched off (POWERCONTEXT_RECALL); the agent gets no context")
    report.info("prompt capture is %s" % ("on" if config.capture else "off"))
    scope_id = hook.resolve_scope(args.cwd, os.environ)
    report.info(f"scope for {args.cwd}: {scope_id}")
    if len(scope_id) > 256:
        report.problem("POWERCONTEXT_SCOPE_ID is longer than 256 characters; the server refuses it")

    print("Server", file=out)
    if not config.error:
        check_server(config, scope_id, report)

    print(f"Installation ({args.agent})", file=out)
    commands = installed_commands(args.agent, args.home, args.cwd)
    if not commands:
        report.problem(
            "no PowerContext hook registered for {}: install the plugin (plugins/README.md)"
            " or run: python3 {} --agent {}".format(
                args.agent, os.path.join(install.HOOKS_DIR, "install.py"), args.agent
            )
        )
    for path, command in commands:
        if not command:
            report.problem(f"{path} is not valid JSON; {args.agent} cannot read it either")
            continue
        report.ok(f"registered in {path}")
        if not args.no_hook_run and not config.error:
            run_installed_hook(args.agent, command, args.cwd, report)
    if commands and args.agent == "codex":
        report.info("Codex runs the hook only once trusted: check it in /hooks after every change.")

    print(
        "All good." if not report.problems else f"{report.problems} thing(s) to fix.",
        file=out,
    )
    return 0 if not report.problems else 1


if __name__ == "__main__":
    sys.exit(run())
