#!/usr/bin/env python3
"""After a GitHub Copilot CLI compaction, the session's pack again: the ``preCompact``
hook forgets that this session was given its pack, so the next prompt carries it once
more. No server call and no output: it must never hold the compaction up.

Registered by the Copilot CLI plugin (plugins/copilot); see hooks/README.md. Standard
library only, Python 3.9+.
"""

import os
import sys

# Explicit, because -I or PYTHONSAFEPATH would drop the script's directory from sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    from hook_entry import run
except Exception:  # a broken install must not break the compaction
    sys.exit(0)

run("copilot", "PreCompact")
