"""The hooks must run on any Python 3.9+ an agent has: checked statically and for real."""

import glob
import json
import shutil
import subprocess
import sys

import pytest

from .conftest import HOOKS_DIR, Reply, prepared

HOOK_FILES = sorted(str(p) for p in HOOKS_DIR.glob("*.py"))


def vermin_command():
    found = shutil.which("vermin") or shutil.which(
        "vermin", path=str(__import__("pathlib").Path(sys.executable).parent)
    )
    return [found] if found else None


def test_hooks_need_no_newer_python_than_3_9():
    command = vermin_command()
    if command is None:
        pytest.skip("vermin is not installed (pip install vermin)")
    done = subprocess.run(
        [*command, "--no-tips", "--violations", "-t=3.9-", *HOOK_FILES],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hooks_import_only_the_standard_library():
    allowed_local = {"powercontext_hook", "hook_entry", "install", "codex_app", "mcp_probe"}
    for path in HOOK_FILES:
        done = subprocess.run(
            [
                sys.executable,
                "-S",
                "-c",
                "import ast,sys;t=ast.parse(open(sys.argv[1]).read());"
                "print('\\n'.join(sorted({(a.name if isinstance(n,ast.Import) else n.module)"
                ".split('.')[0] for n in ast.walk(t) if isinstance(n,(ast.Import,ast.ImportFrom))"
                " for a in (n.names if isinstance(n,ast.Import) else [n]) if getattr(n,'level',0)"
                "==0})))",
                path,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        for module in done.stdout.split():
            assert module in sys.stdlib_module_names or module in allowed_local, (path, module)


def oldest_python():
    candidates = [shutil.which("python3.9")]
    candidates += sorted(glob.glob("/root/.pyenv/versions/3.9*/bin/python3.9"))
    candidates += sorted(glob.glob("/usr/bin/python3.9")) + sorted(
        glob.glob("/usr/local/bin/python3.9")
    )
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 9))"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except OSError:
            continue
        if done.stdout.strip() == "True":
            return candidate
    return None


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_hook_runs_on_python_3_9(agent, hook, fake_server):
    python = oldest_python()
    if python is None:
        pytest.skip("no Python 3.9 interpreter on this machine")
    content = "ready on 3.9 ✓ \u2028 \x00"
    server = fake_server(
        {
            "/v1/context/prepare": Reply(200, prepared(content)),
            "/v1/sources/content": Reply(202, {"status": "accepted"}),
        }
    )
    run = hook(agent, server.url, python=python)
    assert run.returncode == 0, run.stderr
    assert run.stderr == b""
    assert run.context() == content
    assert len(server.requests_to("/v1/sources/content")) == 1
    failing = hook(agent, server.url.rsplit(":", 1)[0] + ":9", python=python)
    assert json.loads(failing.stderr)["outcome"] == "server_unavailable"


def test_installer_and_doctor_start_on_python_3_9(tmp_path):
    python = oldest_python()
    if python is None:
        pytest.skip("no Python 3.9 interpreter on this machine")
    for script in ("install.py", "doctor.py"):
        done = subprocess.run(
            [python, str(HOOKS_DIR / script), "--help"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [
            python,
            str(HOOKS_DIR / "install.py"),
            "--agent",
            "claude",
            "--home",
            str(tmp_path),
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
