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
# Cache the module's bytecode even under PYTHONDONTWRITEBYTECODE: compiling it costs
# milliseconds on every prompt.
sys.dont_write_bytecode = False

try:
    from powercontext_hook import main
except Exception:  # a broken install must not break the turn
    sys.stderr.write(
        '{"component":"powercontext.copilot.recall","event":"context_session",'
        '"outcome":"skipped","http_status":null,"context_status":null,"content_bytes":null}\n'
    )
    sys.exit(0)

main("copilot", "SessionStart")
