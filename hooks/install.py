#!/usr/bin/env python3
"""Register (or remove) the PowerContext UserPromptSubmit hook for Codex or Claude Code.

    python3 hooks/install.py --agent codex                   # ~/.codex/hooks.json
    python3 hooks/install.py --agent claude --scope project  # <repo>/.claude/settings.local.json
    python3 hooks/install.py --agent codex --dry-run         # show, write nothing
    python3 hooks/install.py --agent codex --uninstall

Merges into an existing file without touching other settings or hooks: the PowerContext
handler is appended as its own matcher group (Codex keys hook trust by position, so
groups already there keep their place), replaced in place when its command changed, and
left alone when it is already there. The command names this machine's interpreter and
checkout, so a project-scope install goes to a file git does not commit: Claude Code's
``.claude/settings.local.json``, Codex's ``.codex/hooks.json`` (refused when the
repository tracks it), each added to ``.git/info/exclude`` unless git already ignores it.
For a hook a team can commit, use the plugins (plugins/README.md). Standard library only,
Python 3.9+.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HOOKS_DIR = os.path.dirname(os.path.abspath(__file__))
EVENT = "UserPromptSubmit"
ENTRY_SCRIPTS = {
    "codex": "codex_user_prompt_submit.py",
    "claude": "claude_user_prompt_submit.py",
}
# Seconds. The hook stops itself after about 1.5 s; this is only the host's backstop.
HOST_TIMEOUT = 5
STATUS_MESSAGE = "PowerContext recall"


class InstallError(Exception):
    """A reason to stop without writing anything."""


def find_project_root(start: str) -> str:
    current = os.path.realpath(start)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return os.path.realpath(start)
        current = parent


def settings_path(agent: str, scope: str, home: str, project_dir: str) -> str:
    if scope == "project":
        root = find_project_root(project_dir)
        if agent == "codex":
            return os.path.join(root, ".codex", "hooks.json")
        # Claude Code's local project settings: never committed (settings.json is the
        # team's file, and the command holds this machine's paths).
        return os.path.join(root, ".claude", "settings.local.json")
    if agent == "codex":
        base = os.environ.get("CODEX_HOME") or os.path.join(home, ".codex")
        return os.path.join(base, "hooks.json")
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    return os.path.join(base, "settings.json")


def git(root: str, *args: str) -> subprocess.CompletedProcess | None:
    """Run git in ``root``; None when there is no git to ask."""
    try:
        return subprocess.run(
            ["git", "-C", root, *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def keep_out_of_git(path: str, write: bool) -> str | None:
    """Make sure git will not commit ``path`` (a project-scope settings file). Refuses a
    file the repository tracks; adds an untracked, unignored one to .git/info/exclude
    (local to this clone, so nothing to commit either). Returns what it did, or None."""
    root = find_project_root(os.path.dirname(path))
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    tracked = git(root, "ls-files", "--error-unmatch", "--", relative)
    if tracked is None or tracked.returncode not in (0, 1):
        return None  # no git, or not a repository: nothing can commit the file
    if tracked.returncode == 0:
        raise InstallError(
            f"{relative} is tracked by git, so this machine's hook command would be committed"
            " for the whole team; nothing was changed. Install the plugin instead"
            " (plugins/README.md), or use --scope user"
        )
    ignored = git(root, "check-ignore", "-q", "--", relative)
    if ignored is not None and ignored.returncode == 0:
        return None
    found = git(root, "rev-parse", "--git-path", "info/exclude")
    if found is None or found.returncode != 0:
        return None
    exclude = os.path.join(root, found.stdout.strip())
    if write:
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        with open(exclude, "a", encoding="utf-8") as handle:
            handle.write(f"/{relative}\n")
    return f"added /{relative} to {exclude} so git never commits it"


def legacy_project_file(agent: str, scope: str, path: str) -> str | None:
    """The team's ``.claude/settings.json`` when an older installer put our hook there."""
    if agent != "claude" or scope != "project":
        return None
    team = os.path.join(os.path.dirname(path), "settings.json")
    try:
        data, _ = load(team)
    except InstallError:
        return None
    groups = (data.get("hooks") or {}).get(EVENT) or []
    for grp in groups:
        for entry in (grp.get("hooks") or []) if isinstance(grp, dict) else []:
            if is_ours(agent, entry):
                return team
    return None


def default_python() -> str:
    found = shutil.which("python3")
    return os.path.realpath(found) if found else sys.executable


def hook_command(agent: str, python: str) -> str:
    script = os.path.join(HOOKS_DIR, ENTRY_SCRIPTS[agent])
    # -S: no site-packages to scan; the hook needs the standard library only.
    return " ".join(shlex.quote(part) for part in (python, "-S", script))


def handler(agent: str, command: str) -> dict:
    entry = {"type": "command", "command": command, "timeout": HOST_TIMEOUT}
    if agent == "codex":
        entry["statusMessage"] = STATUS_MESSAGE
    return entry


def group(agent: str, command: str) -> dict:
    # Codex ignores matchers for UserPromptSubmit (and a matcher would change the trust
    # hash); Claude Code documents an empty matcher as "match everything".
    if agent == "claude":
        return {"matcher": "", "hooks": [handler(agent, command)]}
    return {"hooks": [handler(agent, command)]}


def is_ours(agent: str, entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("command"), str)
        and ENTRY_SCRIPTS[agent] in entry["command"]
    )


def load(path: str) -> tuple[dict, bool]:
    """(settings, existed). Refuses a file it cannot merge into safely."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return {}, False
    if not text.strip():
        return {}, True
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InstallError(
            f"{path} is not valid JSON ({exc}); fix it by hand, nothing was changed"
        ) from exc
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was changed")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InstallError(f'"hooks" in {path} is not an object; nothing was changed')
    groups = (hooks or {}).get(EVENT)
    if groups is not None and not isinstance(groups, list):
        raise InstallError(f'"hooks.{EVENT}" in {path} is not a list; nothing was changed')
    return data, True


def merge(agent: str, data: dict, command: str) -> tuple[dict, str]:
    """(new settings, what changed: "added" | "updated" | "unchanged")."""
    data = json.loads(json.dumps(data))  # a deep copy; the input stays as read
    groups = data.setdefault("hooks", {}).setdefault(EVENT, [])
    wanted = handler(agent, command)
    found = False
    changed = False
    kept = []
    for grp in groups:
        entries = grp.get("hooks") if isinstance(grp, dict) else None
        if not isinstance(entries, list):
            kept.append(grp)
            continue
        remaining = []
        for entry in entries:
            if not is_ours(agent, entry):
                remaining.append(entry)
            elif found:  # a duplicate from an earlier hand edit: keep only the first
                changed = True
            else:
                found = True
                changed = changed or entry != wanted
                remaining.append(wanted)
        if remaining or not entries:
            grp["hooks"] = remaining
            kept.append(grp)
    data["hooks"][EVENT] = kept
    if not found:
        kept.append(group(agent, command))
        return data, "added"
    return data, "updated" if changed else "unchanged"


def remove(agent: str, data: dict) -> tuple[dict, int]:
    """(new settings, number of PowerContext handlers removed)."""
    data = json.loads(json.dumps(data))
    hooks = data.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(EVENT), list):
        return data, 0
    removed = 0
    kept = []
    for grp in hooks[EVENT]:
        entries = grp.get("hooks") if isinstance(grp, dict) else None
        if not isinstance(entries, list):
            kept.append(grp)
            continue
        remaining = [e for e in entries if not is_ours(agent, e)]
        removed += len(entries) - len(remaining)
        if remaining or not entries:
            grp["hooks"] = remaining
            kept.append(grp)
    if kept:
        hooks[EVENT] = kept
    else:
        del hooks[EVENT]
        if not hooks:
            del data["hooks"]
    return data, removed


def render(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_atomically(path: str, text: str) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    mode = None
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=".powercontext-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def next_steps(agent: str, uninstall: bool) -> list[str]:
    doctor = "{} {}".format(shlex.quote(sys.executable), os.path.join(HOOKS_DIR, "doctor.py"))
    if uninstall:
        if agent == "codex":
            return [
                "Restart Codex (or open /hooks) so the session drops the hook.",
                "Hooks after the removed one moved up a place; Codex keys trust by place, so"
                " it may ask you to trust them again in /hooks.",
            ]
        return ["Restart Claude Code (or open /hooks) so the session drops the hook."]
    steps = [
        "Make POWERCONTEXT_URL (default http://127.0.0.1:8000) and, if the server has one,"
        " POWERCONTEXT_API_TOKEN visible in the environment the agent starts from.",
    ]
    if agent == "codex":
        steps += [
            "Start Codex and run /hooks: review the PowerContext UserPromptSubmit hook and"
            " trust it. Codex skips an untrusted hook without a word (and in `codex exec`"
            " there is no prompt to trust it), so this step is required.",
            "Hooks need a recent Codex (they are on by default there); if your config.toml"
            " sets [features] hooks = false, turn it back on. A project .codex/hooks.json"
            " loads only in a project Codex trusts.",
        ]
    else:
        steps += [
            "Start Claude Code and run /hooks: the PowerContext command is listed under"
            " UserPromptSubmit.",
        ]
    steps.append(f"Check the whole path the way the hook sees it: {doctor} --agent {agent}")
    return steps


def run(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        description="Register the PowerContext UserPromptSubmit hook for Codex or Claude Code."
    )
    parser.add_argument("--agent", choices=sorted(ENTRY_SCRIPTS), required=True)
    parser.add_argument(
        "--scope",
        choices=("user", "project"),
        default="user",
        help="user: ~/.codex/hooks.json or ~/.claude/settings.json (default); project: the"
        " repository's .codex/hooks.json or .claude/settings.local.json, kept out of git",
    )
    parser.add_argument(
        "--project-dir", default=os.getcwd(), help="a directory in the project (default: cwd)"
    )
    parser.add_argument("--home", default=os.path.expanduser("~"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--python",
        default=None,
        help="interpreter for the hook (3.9+; default: python3 on PATH, resolved)",
    )
    parser.add_argument("--uninstall", action="store_true", help="remove the hook instead")
    parser.add_argument("--dry-run", action="store_true", help="show the result, write nothing")
    args = parser.parse_args(argv)

    path = settings_path(args.agent, args.scope, args.home, args.project_dir)
    try:
        data, existed = load(path)
        ignore_note = None
        if args.scope == "project" and not args.uninstall:
            ignore_note = keep_out_of_git(path, write=not args.dry_run)
    except InstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if args.uninstall:
        new, removed = remove(args.agent, data)
        change = f"removed {removed} PowerContext handler(s)" if removed else "unchanged"
    else:
        command = hook_command(args.agent, args.python or default_python())
        new, change = merge(args.agent, data, command)
    verb = "would be" if args.dry_run else "is"
    if change == "unchanged":
        print(f"{path}: already as wanted, nothing to do", file=out)
    elif args.dry_run:
        print(f"{path} {change} (dry run, nothing written). Resulting file:", file=out)
        print(render(new), end="", file=out)
    else:
        print(
            "{}: {}{}".format(path, change, "" if existed else " (new file)"),
            file=out,
        )
    if change != "unchanged" and not args.dry_run:
        write_atomically(path, render(new))
    if ignore_note:
        print(("Would have " if args.dry_run else "Also ") + ignore_note, file=out)
    legacy = legacy_project_file(args.agent, args.scope, path)
    if legacy:
        print(
            f"Warning: {legacy} (the file the team commits) still holds a PowerContext hook"
            " from an older install, with this machine's paths in it; remove that entry"
            " by hand.",
            file=out,
        )
    if not args.uninstall:
        print(f"The hook command {verb}: {command}", file=out)
    print("Next:", file=out)
    for step in next_steps(args.agent, args.uninstall):
        print("  - " + step, file=out)
    return 0


if __name__ == "__main__":
    sys.exit(run())
