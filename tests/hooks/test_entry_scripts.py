"""The entry scripts the agents run (one per agent and event) share one start,
``hooks/hook_entry.py``: each holds only its agent, its event and the import."""

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

from .conftest import DIAGNOSTIC_KEYS, HOOKS_DIR, REPO_ROOT


def _entry_scripts():
    spec = importlib.util.spec_from_file_location(
        "_pc_plugins_sync_entry", REPO_ROOT / "plugins" / "sync.py"
    )
    sync = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sync)
    names = {name for names in sync.COPIES.values() for name in names}
    return sorted(names - set(sync.SHARED))


ENTRY_SCRIPTS = _entry_scripts()


def test_every_agent_and_event_has_its_entry_script():
    # A prompt and a session script for each of five agents, and Copilot CLI's preCompact.
    assert len(ENTRY_SCRIPTS) == 11
    assert all((HOOKS_DIR / name).is_file() for name in ENTRY_SCRIPTS)


@pytest.mark.parametrize("name", ENTRY_SCRIPTS)
def test_the_entry_scripts_start_lives_in_one_place(name):
    # The bytecode switch and the broken-install line were copied into every script.
    script = (HOOKS_DIR / name).read_text(encoding="utf-8")
    assert "dont_write_bytecode" not in script
    assert '"outcome":"skipped"' not in script
    assert "from hook_entry import run" in script


@pytest.mark.parametrize("name", ENTRY_SCRIPTS)
def test_a_broken_install_still_exits_0_with_the_skipped_line(name, tmp_path):
    # A powercontext_hook that cannot be imported must not break the agent's turn.
    for copied in (name, "hook_entry.py"):
        shutil.copyfile(HOOKS_DIR / copied, tmp_path / copied)
    (tmp_path / "powercontext_hook.py").write_text("raise RuntimeError('broken')\n")
    done = subprocess.run(
        [sys.executable, "-S", str(tmp_path / name)],
        input=b"{}",
        capture_output=True,
        timeout=15,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout == b""
    if name == "copilot_pre_compact.py":  # asks no pack, so has no outcome to report
        assert done.stderr == b""
        return
    line = json.loads(done.stderr)
    assert set(line) == DIAGNOSTIC_KEYS
    agent = name.partition("_")[0]
    event = "context_session" if "session_start" in name else "context_prepare"
    assert line == {
        "component": f"powercontext.{agent}.recall",
        "event": event,
        "outcome": "skipped",
        "http_status": None,
        "context_status": None,
        "content_bytes": None,
    }
