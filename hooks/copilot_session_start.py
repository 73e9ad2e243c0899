#!/usr/bin/env python3
"""PowerContext's pack for the start of a GitHub Copilot CLI session: the sessionStart
hook (new and resumed sessions).

Registered by the Copilot CLI plugin (plugins/copilot); see hooks/README.md. Standard
library only, Python 3.9+.
"""

import os
import sys

# Explicit, because -I or PYTHONSAFEPATH would drop the script's directory from sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    from hook_entry import run
except Exception:  # a broken install must not break the turn
    sys.exit(0)

run("copilot", "SessionStart")
