#!/usr/bin/env python3
"""Register (or remove) the PowerContext hooks for Codex or Claude Code: UserPromptSubmit
(the Context Pack before each prompt) and SessionStart (the session pack).

    python3 hooks/install.py --agent codex                   # ~/.codex/hooks.json
    python3 hooks/install.py --agent claude --scope project  # <repo>/.claude/settings.local.json
    python3 hooks/install.py --agent codex --dry-run         # show, write nothing
    python3 hooks/install.py --agent codex --uninstall

Merges into an existing file without touching other settings or hooks: for each event the
PowerContext handler is appended as its own matcher group (Codex keys hook trust by
position, so groups already there keep their place), replaced in place when an earlier run of this
installer wrote it with another interpreter or checkout, and left alone when it is
already there. A handler this installer did not write is never changed or removed, even
when it names the hook's script: it is pointed out instead (``is_ours``,
``installer_shaped``). The command names this machine's interpreter and
checkout, so a project-scope install goes to a file git does not commit: Claude Code's
``.claude/settings.local.json``, Codex's ``.codex/hooks.json`` (refused when the
repository tracks it), each added to ``.git/info/exclude`` unless git already ignores it.
For a hook a team can commit, use the plugins (plugins/README.md).

A repository's own files are untrusted input (a clone may carry a planted
``.claude/settings.local.json`` or ``.codex/hooks.json``): project-scope files are read only
when they are regular files reached without a symbolic link inside the repository, at most
``PROJECT_FILE_LIMIT`` bytes, and nothing in them is ever run. Standard library only,
Python 3.9+.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

HOOKS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(HOOKS_DIR)
EVENT = "UserPromptSubmit"
ENTRY_SCRIPTS = {
    "codex": "codex_user_prompt_submit.py",
    "claude": "claude_user_prompt_submit.py",
}
# The session pack, as the plugins register it (plugins/*/): same timeout, its own status.
SESSION_EVENT = "SessionStart"
SESSION_SCRIPTS = {
    "codex": "codex_session_start.py",
    "claude": "claude_session_start.py",
}
# Both events, in the order they are written (a new file lists the prompt hook first).
EVENTS = (EVENT, SESSION_EVENT)
# Seconds. The hook stops itself after about 1.5 s; this is only the host's backstop.
HOST_TIMEOUT = 5
STATUS_MESSAGE = "PowerContext recall"
STATUS_MESSAGES = {EVENT: STATUS_MESSAGE, SESSION_EVENT: "PowerContext session memory"}
# A settings file is a few kilobytes; a repository's file larger than this is not read.
PROJECT_FILE_LIMIT = 1024 * 1024


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
    """Run git in ``root``; None when there is no git to ask. ``core.fsmonitor`` is forced
    off: a repository's config could otherwise name a program for git to run."""
    try:
        return subprocess.run(
            ["git", "-C", root, "-c", "core.fsmonitor=false", *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def keep_out_of_git(root: str, path: str, write: bool) -> str | None:
    """Make sure git will not commit ``path`` (a project-scope settings file in the
    repository at ``root``). Refuses a file the repository tracks; adds an untracked,
    unignored one to .git/info/exclude (local to this clone, so nothing to commit either).
    Returns what it did, or None."""
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


def legacy_project_file(agent: str, project_root: str | None, path: str) -> str | None:
    """The team's ``.claude/settings.json`` when an older installer put our hook there."""
    if agent != "claude" or project_root is None:
        return None
    team = os.path.join(os.path.dirname(path), "settings.json")
    try:
        data, _ = load(team, project_root)
    except InstallError:
        return None
    for entry in handlers(data):
        if installer_shaped(agent, entry):
            return team
    return None


def absolute_path_entries() -> str:
    """PATH without its relative entries: ``.`` or ``bin`` would find a program in
    whatever directory this runs from, which may be a repository's."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(entry for entry in entries if os.path.isabs(entry))


def default_python() -> str:
    found = shutil.which("python3", path=absolute_path_entries())
    return os.path.realpath(found) if found else sys.executable


def script_name(agent: str, event: str = EVENT) -> str:
    """The file name of ``agent``'s entry script for ``event`` (``EVENT`` or
    ``SESSION_EVENT``)."""
    return (SESSION_SCRIPTS if event == SESSION_EVENT else ENTRY_SCRIPTS)[agent]


def entry_script(agent: str, event: str = EVENT) -> str:
    """This checkout's entry script for ``agent`` and ``event``, the file the hook command
    runs."""
    return os.path.join(HOOKS_DIR, script_name(agent, event))


def hook_command(agent: str, python: str, event: str = EVENT) -> str:
    # -S: no site-packages to scan; the hook needs the standard library only.
    return " ".join(shlex.quote(part) for part in (python, "-S", entry_script(agent, event)))


def handler(agent: str, command: str, event: str = EVENT) -> dict:
    entry = {"type": "command", "command": command, "timeout": HOST_TIMEOUT}
    if agent == "codex":
        entry["statusMessage"] = STATUS_MESSAGES[event]
    return entry


def group(agent: str, command: str, event: str = EVENT) -> dict:
    # Codex ignores matchers for UserPromptSubmit (and a matcher would change the trust
    # hash; its plugin's SessionStart group has none either, so every source fires);
    # Claude Code documents an empty matcher as "match everything".
    if agent == "claude":
        return {"matcher": "", "hooks": [handler(agent, command, event)]}
    return {"hooks": [handler(agent, command, event)]}


def handlers(data: dict, event: str = EVENT) -> list:
    """Every handler of the ``event`` groups in a settings object."""
    hooks = data.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    found = []
    for grp in groups if isinstance(groups, list) else []:
        entries = grp.get("hooks") if isinstance(grp, dict) else None
        found.extend(entries if isinstance(entries, list) else [])
    return found


def is_ours(entry: object, command: str) -> bool:
    """True for a command handler running exactly ``command`` (``hook_command``): an exact
    comparison, never a search for the script's name, which any command can contain."""
    return (
        isinstance(entry, dict)
        and entry.get("type") == "command"
        and entry.get("command") == command
    )


def installer_script(agent: str, entry: object, event: str = EVENT) -> str | None:
    """The script of an ``event`` handler this installer wrote, with whatever interpreter
    and from whatever checkout: ``<python> -S /abs/.../hooks/<entry script>``, quoted
    exactly as :func:`hook_command` quotes it. None for anything else. Only such a handler
    is replaced or removed in place; nothing looser counts as PowerContext's."""
    if not isinstance(entry, dict) or entry.get("type") != "command":
        return None
    command = entry.get("command")
    if not isinstance(command, str):
        return None
    try:
        parts = shlex.split(command)
    except ValueError:
        return None
    if len(parts) != 3 or parts[1] != "-S" or not parts[0] or parts[0].startswith("-"):
        return None
    if " ".join(shlex.quote(part) for part in parts) != command:
        return None
    script = parts[2]
    if (
        not os.path.isabs(script)
        or os.path.basename(script) != script_name(agent, event)
        or os.path.basename(os.path.dirname(script)) != "hooks"
    ):
        return None
    return script


def installer_shaped(agent: str, entry: object, event: str = EVENT) -> bool:
    return installer_script(agent, entry, event) is not None


def names_powercontext(entry: object) -> bool:
    """A handler that looks like PowerContext's by its text: worth pointing out, never
    enough to change, remove or run it."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    command = entry["command"]
    return "powercontext" in command.lower() or any(
        name in command for name in (*ENTRY_SCRIPTS.values(), *SESSION_SCRIPTS.values())
    )


def project_file_text(root: str, path: str) -> str | None:
    """The text of a repository's own file ``path`` (below ``root``), or None when there is
    none. A repository chooses these files, so InstallError for a path through a symbolic
    link below ``root`` (a link could send a read to /dev/zero or a write anywhere),
    anything but a regular file, over ``PROJECT_FILE_LIMIT`` bytes, or not UTF-8."""
    check_project_path(root, path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise InstallError(f"{path} is not a regular file; nothing was changed")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InstallError(f"{path} cannot be read ({exc}); nothing was changed") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise InstallError(f"{path} is not a regular file; nothing was changed")
        data = handle.read(PROJECT_FILE_LIMIT + 1)
    if len(data) > PROJECT_FILE_LIMIT:
        raise InstallError(
            f"{path} is larger than {PROJECT_FILE_LIMIT} bytes; not read, nothing was changed"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InstallError(f"{path} is not UTF-8 text; nothing was changed") from exc


def check_project_path(root: str, path: str) -> None:
    """InstallError when ``path`` reaches below ``root`` through a symbolic link or a
    component that is not a directory."""
    relative = os.path.relpath(path, root)
    if relative.startswith(os.pardir):
        raise InstallError(f"{path} is outside the repository at {root}; nothing was changed")
    current = root
    parts = relative.split(os.sep)
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode):
            raise InstallError(
                f"{current} is a symbolic link; a repository's settings are used only as"
                " regular files inside it, nothing was changed"
            )
        if index < len(parts) - 1 and not stat.S_ISDIR(info.st_mode):
            raise InstallError(f"{current} is not a directory; nothing was changed")


def load(path: str, project_root: str | None = None) -> tuple[dict, bool]:
    """(settings, existed). Refuses a file it cannot merge into safely. ``project_root``
    marks a repository's own file, read as untrusted input (``project_file_text``)."""
    if project_root is not None:
        found = project_file_text(project_root, path)
        if found is None:
            return {}, False
        text = found
    else:
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
    for event in EVENTS:
        groups = (hooks or {}).get(event)
        if groups is not None and not isinstance(groups, list):
            raise InstallError(f'"hooks.{event}" in {path} is not a list; nothing was changed')
    return data, True


def merge(agent: str, data: dict, command: str, event: str = EVENT) -> tuple[dict, str, list[str]]:
    """(new settings, what changed for ``event``: "added" | "updated" | "unchanged", the
    commands of its handlers left alone that name PowerContext but are not the
    installer's). ``command`` is :func:`hook_command` for ``event``."""
    data = json.loads(json.dumps(data))  # a deep copy; the input stays as read
    groups = data.setdefault("hooks", {}).setdefault(event, [])
    wanted = handler(agent, command, event)
    found = False
    changed = False
    foreign = []
    kept = []
    for grp in groups:
        entries = grp.get("hooks") if isinstance(grp, dict) else None
        if not isinstance(entries, list):
            kept.append(grp)
            continue
        remaining = []
        for entry in entries:
            if not (is_ours(entry, command) or installer_shaped(agent, entry, event)):
                if names_powercontext(entry):
                    foreign.append(entry["command"])
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
    data["hooks"][event] = kept
    if not found:
        kept.append(group(agent, command, event))
        return data, "added", foreign
    return data, "updated" if changed else "unchanged", foreign


def remove(agent: str, data: dict, event: str = EVENT) -> tuple[dict, int, list[str]]:
    """(new settings, number of PowerContext ``event`` handlers removed, the commands of
    its handlers left alone that name PowerContext but are not the installer's)."""
    data = json.loads(json.dumps(data))
    hooks = data.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(event), list):
        return data, 0, []
    removed = 0
    foreign = []
    kept = []
    for grp in hooks[event]:
        entries = grp.get("hooks") if isinstance(grp, dict) else None
        if not isinstance(entries, list):
            kept.append(grp)
            continue
        remaining = [e for e in entries if not installer_shaped(agent, e, event)]
        foreign.extend(e["command"] for e in remaining if names_powercontext(e))
        removed += len(entries) - len(remaining)
        if remaining or not entries:
            grp["hooks"] = remaining
            kept.append(grp)
    if kept:
        hooks[event] = kept
    else:
        del hooks[event]
        if not hooks:
            del data["hooks"]
    return data, removed, foreign


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
                "Restart Codex (or open /hooks) so the session drops the hooks.",
                "Hooks after the removed one moved up a place; Codex keys trust by place, so"
                " it may ask you to trust them again in /hooks.",
            ]
        return ["Restart Claude Code (or open /hooks) so the session drops the hooks."]
    steps = [
        "Make POWERCONTEXT_URL (default http://127.0.0.1:8000) and, if the server has one,"
        " POWERCONTEXT_API_TOKEN visible in the environment the agent starts from.",
    ]
    if agent == "codex":
        steps += [
            "Trust both hooks (UserPromptSubmit and SessionStart): in Codex's /hooks, or"
            f" without the TUI with {doctor} --agent codex --trust-codex-hook. Codex skips an"
            " untrusted hook without a word (and `codex exec` has no prompt to trust it), so"
            " this step is required.",
            "Hooks need a recent Codex (they are on by default there); if your config.toml"
            " sets [features] hooks = false, turn it back on. A project .codex/hooks.json"
            " loads only in a project Codex trusts.",
        ]
    else:
        steps += [
            "Start Claude Code and run /hooks: the PowerContext commands are listed under"
            " UserPromptSubmit and SessionStart.",
        ]
    steps.append(f"Check the whole path the way the hook sees it: {doctor} --agent {agent}")
    return steps


def run(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        description="Register the PowerContext UserPromptSubmit and SessionStart hooks for"
        " Codex or Claude Code."
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
    parser.add_argument("--uninstall", action="store_true", help="remove the hooks instead")
    parser.add_argument("--dry-run", action="store_true", help="show the result, write nothing")
    args = parser.parse_args(argv)

    path = settings_path(args.agent, args.scope, args.home, args.project_dir)
    # A repository's own file is untrusted input (a clone chooses it): read and written
    # only as a regular file inside the repository.
    project_root = find_project_root(args.project_dir) if args.scope == "project" else None
    try:
        data, existed = load(path, project_root)
        ignore_note = None
        if args.scope == "project" and not args.uninstall:
            ignore_note = keep_out_of_git(project_root, path, write=not args.dry_run)
    except InstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    new = data
    foreign: list[str] = []
    commands = []
    if args.uninstall:
        removed = 0
        for event in EVENTS:
            new, count, others = remove(args.agent, new, event)
            removed += count
            foreign += others
        change = f"removed {removed} PowerContext handler(s)" if removed else "unchanged"
    else:
        python = args.python or default_python()
        changes = []
        for event in EVENTS:
            command = hook_command(args.agent, python, event)
            commands.append((event, command))
            new, done, others = merge(args.agent, new, command, event)
            foreign += others
            if done != "unchanged":
                changes.append(f"{event} hook {done}")
        # "added", "updated": each event is said, so an upgrade from an install that had
        # only the prompt hook reads "SessionStart hook added".
        change = ", ".join(changes) if changes else "unchanged"
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
        try:
            if project_root is not None:
                check_project_path(project_root, path)  # again: it may have changed since
            write_atomically(path, render(new))
        except InstallError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    for other in foreign:
        print(
            f"Warning: {path} also registers {json.dumps(other)}, which names PowerContext"
            " but is not what this installer writes; it was left as it is. Remove it by hand"
            " unless you put it there yourself.",
            file=out,
        )
    if ignore_note:
        print(("Would have " if args.dry_run else "Also ") + ignore_note, file=out)
    legacy = legacy_project_file(args.agent, project_root, path)
    if legacy:
        print(
            f"Warning: {legacy} (the file the team commits) still holds a PowerContext hook"
            " from an older install, with this machine's paths in it; remove that entry"
            " by hand.",
            file=out,
        )
    for event, command in commands:
        print(f"The {event} hook command {verb}: {command}", file=out)
    print("Next:", file=out)
    for step in next_steps(args.agent, args.uninstall):
        print("  - " + step, file=out)
    return 0


if __name__ == "__main__":
    sys.exit(run())
