#!/usr/bin/env python3
"""Copy the hook scripts from hooks/ into each agent plugin (plugins/<agent>/scripts/).

Both agents copy an installed plugin's directory into their own cache and run it from
there, so a plugin can use only files inside its directory: Codex skips symlinks when it
copies, so real copies are needed. hooks/ stays the one source; a test fails when a copy
has drifted (tests/hooks/test_plugins.py). Run this after changing a hook script:

    python3 plugins/sync.py
"""

import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The hook's logic and the entry scripts' shared start, then each agent's entry scripts.
SHARED = ("powercontext_hook.py", "hook_entry.py")
COPIES = {
    "codex": (*SHARED, "codex_user_prompt_submit.py", "codex_session_start.py"),
    "claude": (*SHARED, "claude_user_prompt_submit.py", "claude_session_start.py"),
    "gemini": (*SHARED, "gemini_before_agent.py", "gemini_session_start.py"),
    "copilot": (
        *SHARED,
        "copilot_user_prompt_submitted.py",
        "copilot_session_start.py",
        "copilot_pre_compact.py",
    ),
    "opencode": (*SHARED, "opencode_user_prompt_submit.py", "opencode_session_start.py"),
}


def copies():
    """(source, copy) paths, for every script every plugin carries."""
    for agent, names in sorted(COPIES.items()):
        for name in names:
            yield (
                os.path.join(ROOT, "hooks", name),
                os.path.join(ROOT, "plugins", agent, "scripts", name),
            )


def main() -> int:
    for source, copy in copies():
        shutil.copyfile(source, copy)
        print(os.path.relpath(copy, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
