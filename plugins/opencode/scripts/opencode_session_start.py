#!/usr/bin/env python3
"""PowerContext's pack for the start of an OpenCode session: called by the OpenCode
plugin (plugins/opencode) with a SessionStart-shaped payload the first time it sees a
session. See hooks/README.md. Standard library only, Python 3.9+.
"""

import os
import sys

# Explicit, because -I or PYTHONSAFEPATH would drop the script's directory from sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    from hook_entry import run
except Exception:  # a broken install must not break the turn
    sys.exit(0)

run("opencode", "SessionStart")
