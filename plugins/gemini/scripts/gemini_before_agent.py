#!/usr/bin/env python3
"""PowerContext recall and prompt capture for Gemini CLI: the BeforeAgent hook (before the
model reads each prompt; Gemini CLI appends the pack to the prompt as
``<hook_context>...</hook_context>``).

Registered by the Gemini CLI extension (plugins/gemini); see hooks/README.md. Standard
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

run("gemini")
