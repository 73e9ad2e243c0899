"""The installer on temporary homes and projects with pre-existing settings files."""

import json
import os
import subprocess
import sys

import pytest

from .conftest import HOOKS_DIR, hook_env

INSTALL = str(HOOKS_DIR / "install.py")

CLAUDE_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "python3 ~/bin/branch_context.py"}]}
        ],
    },
}
CODEX_HOOKS = {
    "hooks": {
        "SessionStart": [
            {
                "matcher": "startup|resume",
                "hooks": [{"type": "command", "command": "sh session.sh", "timeout": 10}],
            }
        ],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "python3 secrets_scan.py"}]}
        ],
    }
}


def install(home, *args, env=None):
    environment = hook_env(home)
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, INSTALL, "--home", str(home), "--python", "/usr/bin/python3", *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


def ours(agent):
    script = str(HOOKS_DIR / (f"{agent}_user_prompt_submit.py"))
    return "/usr/bin/python3 -S " + script


def ours_session(agent):
    script = str(HOOKS_DIR / (f"{agent}_session_start.py"))
    return "/usr/bin/python3 -S " + script


def commands(data, event):
    """The commands of every ``event`` handler, group by group."""
    return [[e["command"] for e in g["hooks"]] for g in data["hooks"].get(event, [])]


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_claude_install_merges_into_existing_settings(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(CLAUDE_SETTINGS, indent=4))
    done = install(home, "--agent", "claude")
    assert done.returncode == 0, done.stderr
    data = read(settings)
    expected = json.loads(json.dumps(CLAUDE_SETTINGS))
    expected["hooks"]["UserPromptSubmit"].append(
        {
            "matcher": "",
            "hooks": [{"type": "command", "command": ours("claude"), "timeout": 5}],
        }
    )
    # The session hook as the plugin registers it: an empty matcher, every source.
    expected["hooks"]["SessionStart"] = [
        {
            "matcher": "",
            "hooks": [{"type": "command", "command": ours_session("claude"), "timeout": 5}],
        }
    ]
    assert data == expected
    assert list(data) == list(CLAUDE_SETTINGS), "key order is kept"
    assert str(settings) in done.stdout
    assert "added" in done.stdout
    assert "/hooks" in done.stdout


def test_codex_install_appends_after_existing_hooks(home):
    hooks_json = home / ".codex" / "hooks.json"
    hooks_json.parent.mkdir()
    hooks_json.write_text(json.dumps(CODEX_HOOKS))
    done = install(home, "--agent", "codex")
    assert done.returncode == 0, done.stderr
    data = read(hooks_json)
    sessions = data["hooks"]["SessionStart"]
    assert sessions[0] == CODEX_HOOKS["hooks"]["SessionStart"][0], "existing group keeps index 0"
    assert sessions[1:] == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": ours_session("codex"),
                    "timeout": 5,
                    "statusMessage": "PowerContext session memory",
                }
            ]
        }
    ]
    groups = data["hooks"]["UserPromptSubmit"]
    assert groups[0] == CODEX_HOOKS["hooks"]["UserPromptSubmit"][0], "existing group keeps index 0"
    assert groups[1] == {
        "hooks": [
            {
                "type": "command",
                "command": ours("codex"),
                "timeout": 5,
                "statusMessage": "PowerContext recall",
            }
        ]
    }
    assert "trust" in done.stdout
    assert "/hooks" in done.stdout


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_install_creates_a_missing_file(agent, home):
    done = install(home, "--agent", agent)
    assert done.returncode == 0, done.stderr
    path = home / (".codex/hooks.json" if agent == "codex" else ".claude/settings.json")
    [group] = read(path)["hooks"]["UserPromptSubmit"]
    assert group["hooks"][0]["command"] == ours(agent)
    assert "new file" in done.stdout


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_install_is_idempotent(agent, home):
    install(home, "--agent", agent)
    path = home / (".codex/hooks.json" if agent == "codex" else ".claude/settings.json")
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    done = install(home, "--agent", agent)
    assert done.returncode == 0
    assert "nothing to do" in done.stdout
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_both_events_are_registered_each_in_its_own_group(agent, home):
    done = install(home, "--agent", agent)
    assert done.returncode == 0, done.stderr
    path = home / (".codex/hooks.json" if agent == "codex" else ".claude/settings.json")
    data = read(path)
    assert list(data["hooks"]) == ["UserPromptSubmit", "SessionStart"]
    assert commands(data, "UserPromptSubmit") == [[ours(agent)]]
    assert commands(data, "SessionStart") == [[ours_session(agent)]]
    assert "UserPromptSubmit hook added, SessionStart hook added" in done.stdout
    assert f"The SessionStart hook command is: {ours_session(agent)}" in done.stdout


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_a_prompt_only_install_gains_the_session_hook(agent, home):
    """What an earlier version of the installer left: the prompt hook alone."""
    path = home / (".codex/hooks.json" if agent == "codex" else ".claude/settings.json")
    install(home, "--agent", agent)
    data = read(path)
    del data["hooks"]["SessionStart"]
    path.write_text(json.dumps(data))
    done = install(home, "--agent", agent)
    assert done.returncode == 0, done.stderr
    assert "SessionStart hook added" in done.stdout
    assert "UserPromptSubmit hook added" not in done.stdout, "the prompt hook was already right"
    assert "UserPromptSubmit hook updated" not in done.stdout
    after = read(path)
    assert after["hooks"]["UserPromptSubmit"] == data["hooks"]["UserPromptSubmit"]
    assert commands(after, "SessionStart") == [[ours_session(agent)]]
    again = install(home, "--agent", agent)
    assert "nothing to do" in again.stdout


# What an earlier run wrote from a checkout since moved, with another interpreter.
STALE = "/usr/bin/python3.9 -S /old/place/hooks/codex_user_prompt_submit.py"
STALE_SESSION = "/usr/bin/python3.9 -S /old/place/hooks/codex_session_start.py"


def test_a_changed_session_command_is_updated_in_place(home):
    hooks_json = home / ".codex" / "hooks.json"
    hooks_json.parent.mkdir()
    data = json.loads(json.dumps(CODEX_HOOKS))
    # Codex keys trust by place: the stale handler keeps the place it had, after "sh
    # session.sh", and nothing is appended.
    data["hooks"]["SessionStart"].append({"hooks": [{"type": "command", "command": STALE_SESSION}]})
    hooks_json.write_text(json.dumps(data))
    done = install(home, "--agent", "codex")
    assert "SessionStart hook updated" in done.stdout
    assert commands(read(hooks_json), "SessionStart") == [
        ["sh session.sh"],
        [ours_session("codex")],
    ]


@pytest.mark.parametrize(
    "command",
    [
        "python3 /old/place/hooks/codex_session_start.py",
        "sh -c 'curl evil' codex_session_start.py",
        "/usr/bin/python3 -S /x/hooks/codex_session_start.py; touch /tmp/x",
        # The prompt script registered for SessionStart is not what the installer writes.
        "/usr/bin/python3 -S /x/hooks/codex_user_prompt_submit.py",
        "python3 -S /opt/powercontext/start.py",
    ],
)
def test_a_foreign_session_handler_is_left_alone_and_pointed_out(home, command):
    hooks_json = home / ".codex" / "hooks.json"
    hooks_json.parent.mkdir()
    theirs = {"type": "command", "command": command}
    hooks_json.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [theirs]}]}}))
    done = install(home, "--agent", "codex")
    assert done.returncode == 0, done.stderr
    sessions = read(hooks_json)["hooks"]["SessionStart"]
    assert sessions[0] == {"hooks": [theirs]}
    assert commands(read(hooks_json), "SessionStart")[1:] == [[ours_session("codex")]]
    assert "not what this installer writes" in done.stdout
    assert json.dumps(command) in done.stdout
    done = install(home, "--agent", "codex", "--uninstall")
    assert "removed 2" in done.stdout
    assert json.dumps(command) in done.stdout
    assert read(hooks_json) == {"hooks": {"SessionStart": [{"hooks": [theirs]}]}}


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_uninstall_removes_both_hooks(agent, home):
    path = home / (".codex/hooks.json" if agent == "codex" else ".claude/settings.json")
    path.parent.mkdir()
    path.write_text(json.dumps({"model": "x"}))
    install(home, "--agent", agent)
    assert set(read(path)["hooks"]) == {"SessionStart", "UserPromptSubmit"}
    done = install(home, "--agent", agent, "--uninstall")
    assert done.returncode == 0, done.stderr
    assert "removed 2" in done.stdout
    assert read(path) == {"model": "x"}


def test_changed_command_is_updated_in_place(home):
    hooks_json = home / ".codex" / "hooks.json"
    hooks_json.parent.mkdir()
    stale = {"type": "command", "command": STALE}
    data = json.loads(json.dumps(CODEX_HOOKS))
    data["hooks"]["UserPromptSubmit"].insert(0, {"hooks": [stale]})
    hooks_json.write_text(json.dumps(data))
    done = install(home, "--agent", "codex")
    assert "updated" in done.stdout
    groups = read(hooks_json)["hooks"]["UserPromptSubmit"]
    assert len(groups) == 2
    assert groups[0]["hooks"][0]["command"] == ours("codex")
    assert groups[1] == CODEX_HOOKS["hooks"]["UserPromptSubmit"][0]


def test_duplicates_from_hand_edits_are_dropped_keeping_the_first(home):
    hooks_json = home / ".codex" / "hooks.json"
    hooks_json.parent.mkdir()
    other = {"type": "command", "command": "python3 secrets_scan.py"}
    empty_group = {"matcher": "x", "hooks": []}
    mine = {"type": "command", "command": STALE}
    data = {
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [mine]},
                empty_group,
                {"hooks": [dict(mine), other]},
                {"hooks": [dict(mine)]},
            ]
        }
    }
    hooks_json.write_text(json.dumps(data))
    done = install(home, "--agent", "codex")
    assert "updated" in done.stdout
    groups = read(hooks_json)["hooks"]["UserPromptSubmit"]
    assert [[e["command"] for e in g["hooks"]] for g in groups] == [
        [ours("codex")],
        [],
        [other["command"]],
    ], "a group emptied by the clean-up goes; one that was empty already stays"
    assert groups[1] == empty_group


@pytest.mark.parametrize(
    "command",
    [
        # Names the script but is not what the installer writes: no -S, a relative path,
        # a shell around it, a payload behind it.
        "python3 /old/place/hooks/codex_user_prompt_submit.py",
        "python3 -S hooks/codex_user_prompt_submit.py",
        "sh -c 'touch /tmp/x' codex_user_prompt_submit.py",
        "/usr/bin/python3 -S /x/hooks/codex_user_prompt_submit.py; touch /tmp/x",
        "/usr/bin/python3 -S /x/scripts/codex_user_prompt_submit.py",
    ],
)
def test_a_handler_the_installer_did_not_write_is_never_changed_or_removed(home, command):
    hooks_json = home / ".codex" / "hooks.json"
    hooks_json.parent.mkdir()
    theirs = {"type": "command", "command": command}
    hooks_json.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [theirs]}]}}))
    done = install(home, "--agent", "codex")
    assert done.returncode == 0, done.stderr
    assert "added" in done.stdout
    groups = read(hooks_json)["hooks"]["UserPromptSubmit"]
    assert groups[0] == {"hooks": [theirs]}
    assert groups[1]["hooks"][0]["command"] == ours("codex")
    assert "not what this installer writes" in done.stdout
    assert json.dumps(command) in done.stdout
    done = install(home, "--agent", "codex", "--uninstall")
    assert "removed 2" in done.stdout
    assert read(hooks_json) == {"hooks": {"UserPromptSubmit": [{"hooks": [theirs]}]}}


def test_dry_run_writes_nothing(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(CLAUDE_SETTINGS)
    settings.write_text(original)
    done = install(home, "--agent", "claude", "--dry-run")
    assert done.returncode == 0
    assert settings.read_text() == original
    assert "dry run" in done.stdout
    assert ours("claude") in done.stdout
    assert ours_session("claude") in done.stdout
    assert not (home / ".codex").exists()
    done = install(home, "--agent", "codex", "--dry-run")
    assert not (home / ".codex").exists()


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_uninstall_restores_the_other_hooks(agent, home):
    original = CODEX_HOOKS if agent == "codex" else CLAUDE_SETTINGS
    path = home / (".codex/hooks.json" if agent == "codex" else ".claude/settings.json")
    path.parent.mkdir()
    path.write_text(json.dumps(original))
    install(home, "--agent", agent)
    done = install(home, "--agent", agent, "--uninstall")
    assert done.returncode == 0, done.stderr
    assert "removed 2" in done.stdout
    assert read(path) == original
    again = install(home, "--agent", agent, "--uninstall")
    assert "nothing to do" in again.stdout


def test_uninstall_of_the_only_hook_leaves_an_empty_object(home):
    install(home, "--agent", "claude")
    install(home, "--agent", "claude", "--uninstall")
    assert read(home / ".claude" / "settings.json") == {}


def test_uninstall_dry_run_keeps_the_hook(home):
    install(home, "--agent", "codex")
    path = home / ".codex" / "hooks.json"
    before = path.read_bytes()
    done = install(home, "--agent", "codex", "--uninstall", "--dry-run")
    assert "dry run" in done.stdout
    assert path.read_bytes() == before


def git_repo(path):
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=hook_env(path))
    return path


def untracked(project):
    """Files git would offer to commit (untracked and not ignored)."""
    done = subprocess.run(
        ["git", "-C", str(project), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
        env=hook_env(project),
    )
    return sorted(line[3:] for line in done.stdout.splitlines())


def test_project_scope_writes_local_settings_git_never_commits(home, tmp_path):
    project = git_repo(tmp_path / "proj")
    (project / "src").mkdir()
    (project / ".claude").mkdir()
    team = json.dumps({"env": {"A": "1"}})
    (project / ".claude" / "settings.json").write_text(team)
    for agent in ("codex", "claude"):
        done = install(
            home, "--agent", agent, "--scope", "project", "--project-dir", str(project / "src")
        )
        assert done.returncode == 0, done.stderr
        assert "info/exclude" in done.stdout
    assert read(project / ".codex" / "hooks.json")["hooks"]["UserPromptSubmit"]
    # The team's file is untouched; the machine's command is in the local one.
    assert (project / ".claude" / "settings.json").read_text() == team
    local = read(project / ".claude" / "settings.local.json")
    assert local["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == ours("claude")
    assert commands(local, "SessionStart") == [[ours_session("claude")]]
    codex = read(project / ".codex" / "hooks.json")
    assert commands(codex, "SessionStart") == [[ours_session("codex")]]
    assert untracked(project) == [".claude/settings.json"]
    assert not (home / ".codex").exists()
    # A second run neither changes the file nor adds the exclude line again.
    exclude = (project / ".git" / "info" / "exclude").read_text()
    install(home, "--agent", "claude", "--scope", "project", "--project-dir", str(project))
    assert (project / ".git" / "info" / "exclude").read_text() == exclude


def test_project_scope_leaves_an_ignored_file_ignored(home, tmp_path):
    project = git_repo(tmp_path / "proj")
    (project / ".gitignore").write_text(".claude/settings.local.json\n")
    done = install(home, "--agent", "claude", "--scope", "project", "--project-dir", str(project))
    assert done.returncode == 0, done.stderr
    assert "info/exclude" not in done.stdout
    assert untracked(project) == [".gitignore"]


def test_project_scope_refuses_a_tracked_settings_file(home, tmp_path):
    project = git_repo(tmp_path / "proj")
    hooks = project / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    hooks.write_text(json.dumps(CODEX_HOOKS))
    subprocess.run(["git", "-C", str(project), "add", ".codex/hooks.json"], check=True)
    before = hooks.read_bytes()
    done = install(home, "--agent", "codex", "--scope", "project", "--project-dir", str(project))
    assert done.returncode == 2
    assert "tracked by git" in done.stderr
    assert "plugin" in done.stderr
    assert hooks.read_bytes() == before


def test_an_older_install_in_the_team_file_is_pointed_out(home, tmp_path):
    project = git_repo(tmp_path / "proj")
    team = project / ".claude" / "settings.json"
    team.parent.mkdir()
    old = {
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": ours("claude")}]}]}
    }
    team.write_text(json.dumps(old))
    done = install(home, "--agent", "claude", "--scope", "project", "--project-dir", str(project))
    assert done.returncode == 0, done.stderr
    assert f"Warning: {team}" in done.stdout
    assert read(team) == old  # the team's file is the team's to change


def test_project_scope_outside_git_still_installs(home, tmp_path):
    project = tmp_path / "plain"
    project.mkdir()
    done = install(home, "--agent", "claude", "--scope", "project", "--project-dir", str(project))
    assert done.returncode == 0, done.stderr
    assert (project / ".claude" / "settings.local.json").exists()


def test_codex_home_and_claude_config_dir_are_respected(home, tmp_path):
    codex_home, claude_dir = tmp_path / "codexhome", tmp_path / "claudecfg"
    env = {"CODEX_HOME": str(codex_home), "CLAUDE_CONFIG_DIR": str(claude_dir)}
    install(home, "--agent", "codex", env=env)
    install(home, "--agent", "claude", env=env)
    assert (codex_home / "hooks.json").exists()
    assert (claude_dir / "settings.json").exists()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[1, 2]",
        '{"hooks": []}',
        '{"hooks": {"UserPromptSubmit": {}}}',
        '{"hooks": {"SessionStart": "x"}}',
    ],
)
def test_unmergeable_file_is_left_alone(content, home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(content)
    done = install(home, "--agent", "claude")
    assert done.returncode == 2
    assert "nothing was changed" in done.stderr
    assert settings.read_text() == content


def test_file_mode_is_kept(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}")
    os.chmod(settings, 0o600)
    install(home, "--agent", "claude")
    assert settings.stat().st_mode & 0o777 == 0o600


def test_installed_command_runs_the_hook(home, fake_server):
    from .conftest import Reply, codex_payload, prepared

    server = fake_server({"/v1/context/prepare": Reply(200, prepared("ctx"))})
    done = subprocess.run(
        [
            sys.executable,
            INSTALL,
            "--home",
            str(home),
            "--agent",
            "codex",
            "--python",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        env=hook_env(home),
        check=True,
    )
    command = read(home / ".codex" / "hooks.json")["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    # Hosts run the command through a shell, so the test does too.
    run = subprocess.run(  # noqa: S602
        command["command"],
        shell=True,
        input=json.dumps(codex_payload("hi", str(home))).encode(),
        capture_output=True,
        env=hook_env(home, POWERCONTEXT_URL=server.url, POWERCONTEXT_CAPTURE="0"),
        check=False,
    )
    assert done.returncode == 0
    assert run.returncode == 0
    assert json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"] == "ctx"


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_installed_session_command_runs_the_session_hook(agent, home, fake_server):
    from .conftest import Reply, prepared
    from .test_session_start import session_payload

    server = fake_server({"/v1/context/session": Reply(200, prepared("session ctx"))})
    done = subprocess.run(
        [
            sys.executable,
            INSTALL,
            "--home",
            str(home),
            "--agent",
            agent,
            "--python",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        env=hook_env(home),
        check=True,
    )
    path = home / (".codex/hooks.json" if agent == "codex" else ".claude/settings.json")
    [group] = read(path)["hooks"]["SessionStart"]
    run = subprocess.run(  # noqa: S602 (hosts run the command through a shell)
        group["hooks"][0]["command"],
        shell=True,
        input=json.dumps(session_payload(agent, str(home))).encode(),
        capture_output=True,
        env=hook_env(home, POWERCONTEXT_URL=server.url),
        check=False,
    )
    assert done.returncode == 0
    assert run.returncode == 0, run.stderr
    output = json.loads(run.stdout)["hookSpecificOutput"]
    assert output == {"hookEventName": "SessionStart", "additionalContext": "session ctx"}
