#!/usr/bin/env python3
"""Check the PowerContext hook end to end and say in plain words what is wrong.

    python3 hooks/doctor.py --agent codex [--cwd DIR] [--no-hook-run]

Reads the same environment as the hook, resolves the scope the same way, calls the
server the way the hook does (``/health/live``, ``/v1/capabilities``, then one
``/v1/context/prepare`` with a probe query), looks for the hook's registrations in the
agent's settings, the installed plugin copies and the project's own files, and finally
runs this checkout's hook script (the file next to this one) on a probe prompt, with an
environment it builds and capture switched off (the doctor never writes to the server).

The doctor never runs a command it did not write. A registration counts as PowerContext's
only when it is exactly what install.py writes for this checkout (or what the plugin
ships), for its event: in a repository's file, the only SessionStart handler naming
PowerContext that is not flagged is exactly the installer's session command for this
checkout. Any other that names PowerContext is reported as "found, not trusted", with its
file and command, and never run. A repository's own files (``.codex/hooks.json``,
``.claude/settings*.json``) are untrusted input: a clone chooses them. Exit code 0 when all is
well, 1 when something needs fixing. Standard library only, Python 3.9+.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import codex_app
import install
import mcp_probe
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
# file that holds the plugin's hooks, and the command the plugin ships (exactly as in
# plugins/<agent>/; a test checks they agree).
PLUGIN_CACHES = {
    "codex": ("CODEX_HOME", ".codex", "hooks/hooks.json"),
    "claude": ("CLAUDE_CONFIG_DIR", ".claude", ".claude-plugin/plugin.json"),
}
AGENT_NAMES = {
    "codex": "Codex",
    "claude": "Claude Code",
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "opencode": "OpenCode",
}
# The agents whose plugin is the only way in (install.py does not register them): their
# prompt hook's entry script, and the probe payload as that agent sends it.
PLUGIN_ONLY_SCRIPTS = {
    "gemini": "gemini_before_agent.py",
    "copilot": "copilot_user_prompt_submitted.py",
    "opencode": "opencode_user_prompt_submit.py",
}
PLUGIN_COMMANDS = {
    "codex": 'python3 -S "${PLUGIN_ROOT}/scripts/codex_user_prompt_submit.py"',
    "claude": 'python3 -S "${CLAUDE_PLUGIN_ROOT}/scripts/claude_user_prompt_submit.py"',
}
# The plugins' SessionStart hook (the pack a session starts with).
PLUGIN_SESSION_COMMANDS = {
    "codex": 'python3 -S "${PLUGIN_ROOT}/scripts/codex_session_start.py"',
    "claude": 'python3 -S "${CLAUDE_PLUGIN_ROOT}/scripts/claude_session_start.py"',
}
SESSION_SCRIPTS = {agent: agent + "_session_start.py" for agent in AGENT_NAMES}
# Entry scripts a plugin registers for other events: Copilot CLI's preCompact (the session's
# pack again after a compaction).
OTHER_SCRIPTS = {"copilot": ("copilot_pre_compact.py",)}


def entry_script_name(agent: str) -> str:
    return PLUGIN_ONLY_SCRIPTS.get(agent) or install.ENTRY_SCRIPTS[agent]


def probe_payload(agent: str, cwd: str) -> dict:
    """The prompt event as ``agent`` sends it to its hook."""
    if agent == "copilot":  # camelCase, no event name
        return {"timestamp": 0, "cwd": cwd, "prompt": PROBE_QUERY}
    return {
        "hook_event_name": "BeforeAgent" if agent == "gemini" else "UserPromptSubmit",
        "prompt": PROBE_QUERY,
        "cwd": cwd,
        "session_id": "powercontext-doctor",
        "turn_id": "powercontext-doctor",
    }


class Registration:
    """A hook handler found in a settings file that names PowerContext, and whether the
    doctor recognises it as exactly what the installer (or the plugin) writes. Nothing
    found here is ever run: the doctor runs only this checkout's own script."""

    def __init__(self, path: str, scope: str, command: str | None, error: str = "") -> None:
        self.path = path
        self.scope = scope  # "plugin", "user" or "project"
        self.command = command
        self.error = error  # the file could not be read safely
        self.trusted = False
        self.why = ""


def shown(text: str) -> str:
    """A string from a file the doctor did not write, printable on one line: JSON with
    ASCII escapes, so no line break or terminal escape in it can forge the report."""
    return json.dumps(text, ensure_ascii=True)


def read_settings(path: str, scope: str, project_root: str | None) -> list[Registration]:
    """The registrations naming PowerContext in one settings file (none when it is absent)."""
    try:
        data, _ = install.load(path, project_root)
    except install.InstallError as exc:
        return [Registration(path, scope, None, str(exc))]
    return [
        Registration(path, scope, entry["command"])
        for entry in install.handlers(data)
        if install.names_powercontext(entry)
    ]


def plugin_hook_files(agent: str, home: str) -> list[str]:
    """The hooks file of every installed PowerContext plugin copy:
    <agent home>/plugins/cache/<marketplace>/powercontext/<version>/."""
    env_var, default_dir, hooks_file = PLUGIN_CACHES[agent]
    base = os.environ.get(env_var) or os.path.join(home, default_dir)
    pattern = os.path.join(base, "plugins", "cache", "*", "powercontext", "*", hooks_file)
    return sorted(glob.glob(pattern))


def project_files(agent: str, project_root: str) -> list[str]:
    """The repository's own files the agent reads hooks from."""
    if agent == "codex":
        return [os.path.join(project_root, ".codex", "hooks.json")]
    return [
        os.path.join(project_root, ".claude", "settings.json"),
        os.path.join(project_root, ".claude", "settings.local.json"),
    ]


def interpreters() -> set[str]:
    """The interpreters the installer writes into the command when run here."""
    return {install.default_python(), sys.executable, os.path.realpath(sys.executable)}


def is_installer_command(agent: str, command: str, event: str = install.EVENT) -> bool:
    """Exactly the ``event`` command install.py writes for this checkout, with one of the
    interpreters it would choose here."""
    if agent not in install.ENTRY_SCRIPTS:
        return False  # install.py does not register this agent's hooks
    return any(command == install.hook_command(agent, python, event) for python in interpreters())


def judge(agent: str, found: Registration, event: str = install.EVENT) -> None:
    """Set ``trusted`` (exactly what the installer or the plugin writes for ``event``, for
    this checkout) or ``why`` not."""
    command = found.command or ""
    if found.scope == "plugin":
        plugin = PLUGIN_SESSION_COMMANDS if event == install.SESSION_EVENT else PLUGIN_COMMANDS
        found.trusted = command == plugin[agent]
        if not found.trusted:
            found.why = "it is not the command the PowerContext plugin ships"
        return
    if is_installer_command(agent, command, event):
        found.trusted = True
        return
    script = install.installer_script(agent, {"type": "command", "command": command}, event)
    here = install.entry_script(agent, event)
    if script is not None and os.path.realpath(script) == os.path.realpath(here):
        if found.scope == "user":
            # The user's own file, with an interpreter chosen with --python.
            found.trusted = True
            return
        found.why = "it runs this checkout's hook with an interpreter the installer did not choose"
    elif script is not None:
        found.why = f"it runs another copy of the hook, {shown(script)}"
    else:
        found.why = "it is not the command install.py writes"


# What a repository's settings may set for the hook that sends the prompts elsewhere.
REDIRECTING_VARIABLES = (
    "POWERCONTEXT_URL",
    "POWERCONTEXT_ALLOW_INSECURE_HTTP",
    "POWERCONTEXT_API_TOKEN",
    "POWERCONTEXT_SCOPE_ID",
)


def other_event_handlers(agent: str, path: str, project_root: str) -> list[Registration]:
    """Handlers of any other event (SessionStart, ...) in a repository's file that name
    PowerContext. The one the installer writes there is exactly its SessionStart command
    for this checkout (``install.py --scope project``), matched as the prompt hook is;
    anything else is the repository's choice, so none is PowerContext's own."""
    try:
        data, _ = install.load(path, project_root)
    except install.InstallError:
        return []
    found = []
    hooks = data.get("hooks")
    for event, groups in sorted(hooks.items()) if isinstance(hooks, dict) else []:
        if event == install.EVENT or not isinstance(groups, list):
            continue
        for grp in groups:
            for entry in grp.get("hooks") or [] if isinstance(grp, dict) else []:
                if not install.names_powercontext(entry):
                    continue
                if (
                    event == install.SESSION_EVENT
                    and entry.get("type") == "command"
                    and is_installer_command(agent, entry["command"], install.SESSION_EVENT)
                ):
                    continue  # what install.py wrote; the prompt hook's line speaks for it
                registration = Registration(path, "project", str(entry.get("command")))
                registration.why = f"a {shown(str(event))} handler the repository chose"
                found.append(registration)
    return found


def project_overrides(agent: str, project_dir: str) -> list[str]:
    """Problem lines for a repository's Claude Code settings whose ``env`` sets the hook's
    variables: Claude Code passes them to the hook, so a clone could send every prompt
    (and the token) to a server of its choosing."""
    if agent != "claude":
        return []
    root = install.find_project_root(project_dir)
    lines = []
    for path in project_files(agent, root):
        try:
            data, _ = install.load(path, root)
        except install.InstallError:
            continue
        env = data.get("env")
        named = sorted(n for n in REDIRECTING_VARIABLES if isinstance(env, dict) and n in env)
        if named:
            values = ", ".join(f"{n}={shown(str(env[n]))}" for n in named)
            lines.append(
                f"the repository's {shown(path)} sets {values} for Claude Code, which passes"
                " it to the hook: the repository chooses where your prompts go. Remove"
                " those keys unless you put them there yourself."
            )
    return lines


def registrations(agent: str, home: str, project_dir: str) -> list[Registration]:
    found = []
    for path in plugin_hook_files(agent, home):
        found.extend(read_settings(path, "plugin", None))
    user_file = install.settings_path(agent, "user", home, project_dir)
    found.extend(read_settings(user_file, "user", None))
    root = install.find_project_root(project_dir)
    for path in project_files(agent, root):
        found.extend(read_settings(path, "project", root))
        found.extend(other_event_handlers(agent, path, root))
    for registration in found:
        if registration.command is not None and not registration.why:
            judge(agent, registration)
    return found


def missing_session_hooks(agent: str, found: list[Registration], project_dir: str) -> list[str]:
    """Problem lines for each settings file holding the installer's prompt hook but not its
    SessionStart hook (an install from before install.py wrote both): sessions there start
    without their pack, and re-running the installer adds it."""
    files: dict[str, str] = {}
    for registration in found:
        if registration.trusted and registration.scope != "plugin":
            files.setdefault(registration.path, registration.scope)
    root = install.find_project_root(project_dir)
    lines = []
    for path, scope in files.items():
        try:
            data, _ = install.load(path, root if scope == "project" else None)
        except install.InstallError:
            continue  # reported with the registration already
        sessions = []
        for entry in install.handlers(data, install.SESSION_EVENT):
            if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                session = Registration(path, scope, entry["command"])
                judge(agent, session, install.SESSION_EVENT)
                sessions.append(session)
        if not any(session.trusted for session in sessions):
            lines.append(
                f"{shown(path)} registers the PowerContext prompt hook but not its SessionStart"
                " hook, so a session starts without its pack. Fix: "
                + install_command(agent, scope, project_dir)
            )
    return lines


def install_command(agent: str, scope: str, project_dir: str) -> str:
    parts = ["python3", os.path.join(install.HOOKS_DIR, "install.py"), "--agent", agent]
    if scope == "project":
        parts += ["--scope", "project", "--project-dir", project_dir]
    return " ".join(shlex.quote(part) for part in parts)


def report_registration(agent: str, found: Registration, project_dir: str, report) -> None:
    where = shown(found.path)
    if found.error:
        report.problem(
            f"{where} could not be read ({found.error}); {AGENT_NAMES[agent]} may not read it"
            " either"
        )
        return
    if found.trusted:
        report.ok(f"registered in {found.path}")
        return
    text = (
        f"found, not trusted: {where} registers {shown(found.command or '')}; {found.why},"
        " so the doctor did not run it."
    )
    if found.scope == "project":
        text += (
            f" The file is the repository's: {AGENT_NAMES[agent]} runs it in this project."
            " Remove that"
            " entry unless you put it there yourself"
        )
    else:
        text += " Remove that entry unless you put it there yourself"
    if install.installer_shaped(agent, {"type": "command", "command": found.command}):
        text += "; to point it at this checkout run: " + install_command(
            agent, found.scope, project_dir
        )
    report.problem(text + ".")


def hook_environment(config) -> dict:
    """What the hook needs and nothing else: the server, the token, the scope and recall
    settings, capture off (the doctor never writes)."""
    env = {"POWERCONTEXT_CAPTURE": "0", "POWERCONTEXT_URL": config.url}
    for name in (
        "POWERCONTEXT_API_TOKEN",
        "POWERCONTEXT_SCOPE_ID",
        "POWERCONTEXT_RECALL",
        "POWERCONTEXT_ALLOW_INSECURE_HTTP",
        "POWERCONTEXT_HOOK_TIMEOUT_MS",
        "SYSTEMROOT",  # Windows sockets need it
    ):
        if name in os.environ:
            env[name] = os.environ[name]
    env["PATH"] = install.absolute_path_entries()
    return env


def run_own_hook(agent: str, config, cwd: str, report: Report) -> None:
    """Run this checkout's entry script (the file next to the doctor) the way the installed
    command runs it, on a probe prompt, with an environment built here."""
    argv = [
        install.default_python(),
        "-S",
        os.path.join(install.HOOKS_DIR, entry_script_name(agent)),
    ]
    payload = probe_payload(agent, cwd)
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv,
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=hook_environment(config),
            cwd=install.HOOKS_DIR,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        report.problem(f"this checkout's hook could not run ({' '.join(argv)}): {exc}")
        return
    elapsed = (time.monotonic() - started) * 1000
    label = f"this checkout's hook ({argv[0]} -S {argv[2]})"
    if done.returncode != 0:
        report.problem(
            f"{label} exited with {done.returncode}"
            f" (stderr: {shown(done.stderr.decode('utf-8', 'replace').strip()[:300])})"
        )
        return
    if done.stdout:
        report.ok(f"{label} injected context ({elapsed:.0f} ms wall time)")
        return
    try:
        outcome = json.loads(done.stderr.decode("utf-8").splitlines()[0])["outcome"]
    except (ValueError, IndexError, KeyError, TypeError):
        report.problem(f"{label} printed an unreadable diagnostic: {shown(repr(done.stderr))}")
        return
    if outcome == hook.EMPTY:
        report.ok(f"{label} ran ({elapsed:.0f} ms): outcome empty")
    else:
        known = outcome in (
            hook.SKIPPED,
            hook.AUTHENTICATION_FAILED,
            hook.VERSION_MISMATCH,
            hook.SERVER_UNAVAILABLE,
            hook.INVALID_RESPONSE,
        )
        report.problem(
            f"{label} ran ({elapsed:.0f} ms): outcome {outcome if known else shown(str(outcome))}"
        )


# ------------------------------------------------------------------ what the agent does


def doctor_command(agent: str, *extra: str) -> str:
    parts = ["python3", os.path.join(install.HOOKS_DIR, "doctor.py"), "--agent", agent, *extra]
    return " ".join(shlex.quote(part) for part in parts)


def read_json(path: str) -> object:
    """A JSON file of the agent's own, or None when absent or unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.loads(handle.read(4 * 1024 * 1024))
    except (OSError, ValueError):
        return None


def copy_differences(script_dir: str, agent: str) -> list[str]:
    """The hook files in ``script_dir`` (the copy the agent runs) that differ from this
    checkout's ``hooks/``: the doctor checks this checkout, so it must be what runs."""
    differing = []
    shared = ("powercontext_hook.py", "hook_entry.py")
    names = (
        *shared,
        entry_script_name(agent),
        SESSION_SCRIPTS[agent],
        *OTHER_SCRIPTS.get(agent, ()),
    )
    for name in names:
        try:
            with open(os.path.join(script_dir, name), "rb") as theirs:
                copy = theirs.read()
            with open(os.path.join(install.HOOKS_DIR, name), "rb") as ours:
                same = copy == ours.read()
        except OSError:
            same = False
        if not same:
            differing.append(name)
    return differing


def claude_plugin_root(home: str) -> tuple[str, str] | None:
    """(the plugin directory Claude Code runs the hook from, why there), or None when the
    plugin is not installed. From a directory marketplace Claude Code runs the clone's
    own copy (``plugins/claude``), not the copy it keeps in its cache."""
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    installed = read_json(os.path.join(base, "plugins", "installed_plugins.json"))
    plugins = installed.get("plugins") if isinstance(installed, dict) else None
    for plugin_id, entries in sorted(plugins.items()) if isinstance(plugins, dict) else []:
        if not plugin_id.startswith("powercontext@") or not isinstance(entries, list):
            continue
        marketplace = plugin_id.partition("@")[2]
        known = read_json(os.path.join(base, "plugins", "known_marketplaces.json"))
        source = (known.get(marketplace) or {}) if isinstance(known, dict) else {}
        kind = (source.get("source") or {}).get("source") if isinstance(source, dict) else None
        location = source.get("installLocation") if isinstance(source, dict) else None
        if kind == "directory" and isinstance(location, str):
            listing = read_json(os.path.join(location, ".claude-plugin", "marketplace.json"))
            for entry in listing.get("plugins") or [] if isinstance(listing, dict) else []:
                relative = entry.get("source") if isinstance(entry, dict) else None
                if entry.get("name") == "powercontext" and isinstance(relative, str):
                    root = os.path.normpath(os.path.join(location, relative))
                    if os.path.commonpath([root, os.path.normpath(location)]) == os.path.normpath(
                        location
                    ):
                        return root, f"the marketplace is the directory {location}"
        for entry in entries:
            path = entry.get("installPath") if isinstance(entry, dict) else None
            if isinstance(path, str):
                return path, "Claude Code's plugin cache"
    return None


def report_copy(agent: str, script_dir: str, why: str, fix: str, report: Report) -> None:
    differing = copy_differences(script_dir, agent)
    if differing:
        report.problem(
            f"{AGENT_NAMES[agent]} runs the hook from {shown(script_dir)} ({why}), and its"
            f" {', '.join(differing)} differ from this checkout's hooks/, which the doctor"
            f" checks. Fix: {fix}"
        )
    else:
        report.ok(
            f"{AGENT_NAMES[agent]} runs the hook from {script_dir} ({why}), the same as hooks/"
        )


def report_mcp(agent: str, url: str, headers: dict, scope_id: str, fix: str, report) -> None:
    failure = mcp_probe.probe(url, headers, scope_id)
    if failure is None:
        report.ok(f"{AGENT_NAMES[agent]}'s MCP entry answers tools/list and a read at {url}")
    else:
        report.problem(f"{AGENT_NAMES[agent]}'s MCP entry: {failure}. Fix: {fix}")


def check_claude(args, config, scope_id: str, report: Report) -> None:
    found = claude_plugin_root(args.home)
    if found is None:
        report.info(
            "the PowerContext plugin is not installed in Claude Code (so no MCP tools):"
            " claude plugin marketplace add <this checkout> && claude plugin install"
            " powercontext@powercontext"
        )
        return
    root, why = found
    report_copy(
        "claude",
        os.path.join(root, "scripts"),
        why,
        "claude plugin update powercontext@powercontext (or add this checkout as the"
        " marketplace: claude plugin marketplace add " + shlex.quote(install.REPO_DIR) + ")",
        report,
    )
    manifest = read_json(os.path.join(root, ".claude-plugin", "plugin.json"))
    servers = manifest.get("mcpServers") if isinstance(manifest, dict) else None
    server = servers.get("powercontext") if isinstance(servers, dict) else None
    if not isinstance(server, dict) or not isinstance(server.get("url"), str):
        report.problem(f"the plugin at {shown(root)} declares no PowerContext MCP server")
        return
    if not args.server_up:
        report.problem("Claude Code's MCP tools cannot work while the server is down (above)")
        return
    environ = dict(os.environ)
    url = mcp_probe.expand(server["url"], environ)
    headers = {
        str(name): mcp_probe.expand(str(value), environ)
        for name, value in (server.get("headers") or {}).items()
    }
    report_mcp(
        "claude",
        url,
        headers,
        scope_id,
        "start Claude Code with POWERCONTEXT_URL (the server's address, now "
        f"{config.url}) and, if the server has a token, POWERCONTEXT_API_TOKEN set",
        report,
    )


def codex_mcp_command(config) -> str:
    parts = ["codex", "mcp", "add", "powercontext", "--url", config.url + "/mcp"]
    if config.token:
        parts += ["--bearer-token-env-var", "POWERCONTEXT_API_TOKEN"]
    return " ".join(shlex.quote(part) for part in parts)


def codex_view(codex: str, cwd: str) -> tuple[list, dict]:
    """(Codex's hook entries for ``cwd``, its effective config)."""
    hooks, config = codex_app.call(
        codex,
        [("hooks/list", {"cwds": [cwd]}), ("config/read", {"includeLayers": False, "cwd": cwd})],
        cwd=cwd,
    )
    entries = []
    for item in (hooks or {}).get("data") or []:
        entries.extend(item.get("hooks") or [])
    return entries, (config or {}).get("config") or {}


def codex_hook_is_ours(entry: dict) -> bool:
    """Exactly the plugin's command (with the plugin root Codex filled in) or exactly the
    installer's: the same rule as for the settings files."""
    command = entry.get("command")
    if not isinstance(command, str):
        return False
    if entry.get("source") == "plugin":
        root = os.path.dirname(os.path.dirname(str(entry.get("sourcePath") or "")))
        commands = PLUGIN_COMMANDS if entry.get("eventName") == "userPromptSubmit" else {}
        if entry.get("eventName") == "sessionStart":
            commands = PLUGIN_SESSION_COMMANDS
        return command == commands.get("codex", "").replace("${PLUGIN_ROOT}", root)
    events = {"userPromptSubmit": install.EVENT, "sessionStart": install.SESSION_EVENT}
    event = events.get(str(entry.get("eventName")))
    if event is None:
        return False
    scope = "user" if entry.get("source") == "user" else "project"
    found = Registration(str(entry.get("sourcePath")), scope, command)
    judge("codex", found, event)
    return found.trusted


def codex_config_file() -> str:
    base = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return os.path.join(base, "config.toml")


def check_codex_config(args, config, scope_id: str, report: Report) -> None:
    """Without ``codex`` to ask (installed under an npm prefix, behind an alias or npx):
    what Codex's own config.toml says. Trust cannot be confirmed from it (Codex records a
    hash of the hook it computes itself), so this is a problem line, never "All good"."""
    path = codex_config_file()
    report.problem(
        "codex is not on PATH, so the doctor could not confirm that Codex trusts and runs the"
        ' hooks. Fix: run the doctor with codex on PATH (e.g. PATH="$(npm prefix -g)/bin:$PATH")'
    )
    try:
        import tomllib  # Python 3.11+  # novermin
    except ImportError:
        report.info(f"this Python cannot read {path} (tomllib is Python 3.11+)")
        return
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError:
        report.info(f"no Codex config at {path}")
        return
    except ValueError as exc:
        report.problem(f"{path} is not valid TOML ({exc}); Codex will not start with it")
        return
    state = (data.get("hooks") or {}).get("state") if isinstance(data.get("hooks"), dict) else None
    ours = [key for key in (state or {}) if "powercontext" in str(key).lower()]
    if ours:
        report.info(f"{path} records trust for {len(ours)} PowerContext hook(s) (hooks.state)")
    else:
        report.problem(f"{path} records no trust for a PowerContext hook (hooks.state)")
    server = (data.get("mcp_servers") or {}).get("powercontext")
    if not isinstance(server, dict) or not isinstance(server.get("url"), str):
        report.problem(
            f"Codex has no PowerContext MCP server, so no tools. Fix: {codex_mcp_command(config)}"
        )
    elif args.server_up:
        variable = server.get("bearer_token_env_var")
        headers = mcp_probe.bearer_headers(os.environ, variable)
        report_mcp("codex", server["url"], headers, scope_id, codex_mcp_command(config), report)


def check_codex(args, config, scope_id: str, report: Report) -> None:
    codex = codex_app.find_codex(install.absolute_path_entries())
    if codex is None:
        check_codex_config(args, config, scope_id, report)
        return
    try:
        entries, effective = codex_view(codex, args.cwd)
    except codex_app.CodexError as exc:
        report.problem(f"could not ask Codex what it will run ({exc})")
        return
    ours = [entry for entry in entries if codex_hook_is_ours(entry)]
    if not any(entry.get("eventName") == "userPromptSubmit" for entry in ours):
        report.problem(
            "Codex discovers no PowerContext UserPromptSubmit hook for this project. Fix:"
            " codex plugin marketplace add " + shlex.quote(install.REPO_DIR) + " && codex"
            " plugin add powercontext@powercontext"
        )
    trust_fix = doctor_command("codex", "--cwd", args.cwd, "--trust-codex-hook")
    copies: set[str] = set()
    for entry in ours:
        script_dir = os.path.dirname(shlex.split(entry["command"])[-1])
        same = not copy_differences(script_dir, "codex")
        if script_dir not in copies:
            copies.add(script_dir)
            report_copy(
                "codex",
                script_dir,
                "as Codex reports it",
                "codex plugin remove powercontext@powercontext && codex plugin add"
                " powercontext@powercontext",
                report,
            )
        if entry.get("enabled") is False:
            report.problem("Codex has the hook switched off. Fix: enable it in Codex's /hooks")
        status = entry.get("trustStatus")
        event = "SessionStart" if entry.get("eventName") == "sessionStart" else "UserPromptSubmit"
        if status in ("trusted", "managed"):
            report.ok(f"Codex trusts the {event} hook, so it runs it")
        elif args.trust_codex_hook and same:
            try:
                codex_app.call(
                    codex,
                    [("config/batchWrite", {"edits": [codex_app.trust_edit(entry)]})],
                    cwd=args.cwd,
                )
            except codex_app.CodexError as exc:
                report.problem(f"could not record trust in Codex ({exc})")
            else:
                report.ok(f"Codex trusts the {event} hook now (recorded as /hooks would)")
        else:
            state = "changed since it was trusted" if status == "modified" else "not trusted"
            report.problem(
                f"Codex skips the {event} hook without a word: it is {state}. Fix: {trust_fix}"
                " (or trust it in Codex's /hooks)"
            )
    server = (effective.get("mcp_servers") or {}).get("powercontext")
    wanted = config.url + "/mcp"
    if not isinstance(server, dict) or not isinstance(server.get("url"), str):
        report.problem(
            f"Codex has no PowerContext MCP server, so no tools. Fix: {codex_mcp_command(config)}"
        )
        return
    if server.get("enabled") is False:
        report.info("Codex's PowerContext MCP server is switched off (enabled = false)")
        return
    if not args.server_up:
        # A remove-and-add of the same address would change nothing.
        report.problem("Codex's MCP tools cannot work while the server is down (above)")
        return
    fix = "codex mcp remove powercontext && " + codex_mcp_command(config)
    if server["url"] != wanted:
        report.problem(
            f"Codex's PowerContext MCP server is {shown(server['url'])}, the hook's server"
            f" {wanted}. Fix: {fix}"
        )
        return
    variable = server.get("bearer_token_env_var")
    if variable and not os.environ.get(str(variable), "").strip():
        report.problem(
            f"Codex's MCP entry takes its token from {variable}, which is not set here: Codex"
            f" then leaves the server out without a word. Fix: set {variable}, or if the"
            f" server has no token: {fix}"
        )
        return
    headers = mcp_probe.bearer_headers(os.environ, variable)
    for name, value in (server.get("http_headers") or {}).items():
        headers[str(name)] = str(value)
    for name, source in (server.get("env_http_headers") or {}).items():
        if os.environ.get(str(source)):
            headers[str(name)] = os.environ[str(source)]
    report_mcp("codex", wanted, headers, scope_id, fix, report)


# ------------------------------------------- Gemini CLI, Copilot CLI and OpenCode


def plugin_copy(agent: str, home: str) -> tuple[str, str] | None:
    """(the PowerContext plugin directory ``agent`` runs, where it was found), or None.

    Gemini CLI copies an installed extension to ``~/.gemini/extensions/<name>/``; Copilot
    CLI a plugin to ``~/.copilot/installed-plugins/<source>/<name>/``; OpenCode loads the
    ``file://`` entries of its config's ``plugin`` list in place."""
    if agent == "gemini":
        root = os.path.join(home, ".gemini", "extensions", "powercontext")
        manifest = read_json(os.path.join(root, "gemini-extension.json"))
        if isinstance(manifest, dict) and manifest.get("name") == "powercontext":
            return root, "Gemini CLI's copy of the extension"
        return None
    if agent == "copilot":
        base = os.environ.get("COPILOT_HOME") or os.path.join(home, ".copilot")
        for path in sorted(glob.glob(os.path.join(base, "installed-plugins", "*", "*"))):
            manifest = read_json(os.path.join(path, "plugin.json"))
            if isinstance(manifest, dict) and manifest.get("name") == "powercontext":
                return path, "Copilot CLI's copy of the plugin"
        return None
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    config = read_json(os.path.join(config_home, "opencode", "opencode.json"))
    for entry in config.get("plugin") or [] if isinstance(config, dict) else []:
        spec = entry if isinstance(entry, str) else None
        if spec and spec.startswith("file://"):
            root = spec[len("file://") :]
            manifest = read_json(os.path.join(root, "package.json"))
            if isinstance(manifest, dict) and manifest.get("name") == "powercontext-opencode":
                return root, "the plugin entry of OpenCode's opencode.json"
    return None


INSTALL_LINES = {
    "gemini": "gemini extensions install {repo}/plugins/gemini --consent",
    "copilot": "copilot plugin install {repo}/plugins/copilot",
    "opencode": "opencode plugin file://{repo}/plugins/opencode --global",
}
UPDATE_LINES = {
    "gemini": "gemini extensions uninstall powercontext && " + INSTALL_LINES["gemini"],
    "copilot": "copilot plugin uninstall powercontext && " + INSTALL_LINES["copilot"],
    "opencode": INSTALL_LINES["opencode"] + " --force",
}


def copilot_mcp_command(config) -> str:
    parts = ["copilot", "mcp", "add", "--transport", "http", "powercontext", config.url + "/mcp"]
    line = " ".join(shlex.quote(part) for part in parts)
    if config.token:
        line += " --header 'Authorization: Bearer ${POWERCONTEXT_API_TOKEN}'"
    return line


def plugin_mcp_entry(agent: str, root: str, home: str, config) -> tuple[str, dict] | None:
    """(URL, headers) of the PowerContext MCP server as ``agent`` will call it, or None."""
    environ = dict(os.environ)
    if agent == "opencode":  # the plugin's config hook builds it from the environment
        return config.url + "/mcp", mcp_probe.bearer_headers(environ, "POWERCONTEXT_API_TOKEN")
    if agent == "gemini":
        manifest = read_json(os.path.join(root, "gemini-extension.json"))
        servers = manifest.get("mcpServers") if isinstance(manifest, dict) else None
        key = "httpUrl"
    else:
        base = os.environ.get("COPILOT_HOME") or os.path.join(home, ".copilot")
        listing = read_json(os.path.join(base, "mcp-config.json"))
        servers = listing.get("mcpServers") if isinstance(listing, dict) else None
        key = "url"
    server = servers.get("powercontext") if isinstance(servers, dict) else None
    if not isinstance(server, dict) or not isinstance(server.get(key), str):
        return None
    headers = {
        str(name): mcp_probe.expand(str(value), environ)
        for name, value in (server.get("headers") or {}).items()
    }
    return mcp_probe.expand(server[key], environ), headers


def check_plugin_agent(args, config, scope_id: str, report: Report) -> None:
    agent = args.agent
    name = AGENT_NAMES[agent]
    install_line = INSTALL_LINES[agent].format(repo=shlex.quote(install.REPO_DIR))
    found = plugin_copy(agent, args.home)
    if found is None:
        report.problem(f"the PowerContext plugin is not installed in {name}. Fix: {install_line}")
        return
    root, why = found
    report_copy(
        agent,
        os.path.join(root, "scripts"),
        why,
        UPDATE_LINES[agent].format(repo=shlex.quote(install.REPO_DIR)),
        report,
    )
    if not args.server_up:
        report.problem(
            f"{name}'s MCP tools cannot work while the server is down (above): start it first"
        )
        return
    entry = plugin_mcp_entry(agent, root, args.home, config)
    fix = (
        copilot_mcp_command(config)
        if agent == "copilot"
        else f"start {name} with POWERCONTEXT_URL (the server's address, now {config.url}) and,"
        " if the server has a token, POWERCONTEXT_API_TOKEN set"
    )
    if entry is None:
        report.problem(f"{name} has no PowerContext MCP server, so no tools. Fix: {fix}")
        return
    url, headers = entry
    report_mcp(agent, url, headers, scope_id, fix, report)


def run(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(description="Check the PowerContext hook end to end.")
    parser.add_argument("--agent", choices=sorted(AGENT_NAMES), default="codex")
    parser.add_argument("--cwd", default=os.getcwd(), help="the project directory to check")
    parser.add_argument("--home", default=os.path.expanduser("~"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-hook-run", action="store_true", help="do not run this checkout's hook script"
    )
    parser.add_argument(
        "--no-agent",
        action="store_true",
        help="do not ask the agent (codex app-server) nor call its MCP entry",
    )
    parser.add_argument(
        "--trust-codex-hook",
        action="store_true",
        help="record Codex's trust for PowerContext's own hook (what /hooks does), when it is"
        " exactly the plugin's or the installer's command and its copy matches this checkout",
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
    before = report.problems
    if not config.error:
        check_server(config, scope_id, report)
    args.server_up = not config.error and report.problems == before

    print(f"Installation ({args.agent})", file=out)
    if args.agent in PLUGIN_ONLY_SCRIPTS:
        if not args.no_hook_run and not config.error:
            run_own_hook(args.agent, config, args.cwd, report)
        if not args.no_agent and not config.error:
            print(f"What {AGENT_NAMES[args.agent]} will do", file=out)
            check_plugin_agent(args, config, scope_id, report)
        return finish(report, out)
    found = registrations(args.agent, args.home, args.cwd)
    for registration in found:
        report_registration(args.agent, registration, args.cwd, report)
    if not any(registration.trusted for registration in found):
        report.problem(
            "no PowerContext hook registered for {}: install the plugin (plugins/README.md)"
            " or run: {}".format(args.agent, install_command(args.agent, "user", args.cwd))
        )
    elif args.agent == "codex" and not args.trust_codex_hook:
        report.info(
            "Codex runs the two PowerContext hooks only once trusted: check them in /hooks"
            " after every change."
        )
    for text in missing_session_hooks(args.agent, found, args.cwd):
        report.problem(text)
    for text in project_overrides(args.agent, args.cwd):
        report.problem(text)
    if not args.no_hook_run and not config.error:
        run_own_hook(args.agent, config, args.cwd, report)

    if not args.no_agent and not config.error:
        print(f"What {AGENT_NAMES[args.agent]} will do", file=out)
        checks = {"codex": check_codex, "claude": check_claude}
        checks[args.agent](args, config, scope_id, report)

    return finish(report, out)


def finish(report: Report, out) -> int:
    print(
        "All good." if not report.problems else f"{report.problems} thing(s) to fix.",
        file=out,
    )
    return 0 if not report.problems else 1


if __name__ == "__main__":
    sys.exit(run())
