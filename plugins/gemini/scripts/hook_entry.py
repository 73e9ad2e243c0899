"""What every entry script (``<agent>_<event>.py``) does before the hook runs.

The agents run the entry scripts as plain scripts (``python3 -S <script>``, whatever
Python 3.9+ they find, no virtualenv), one per agent and event; each only puts its own
directory on ``sys.path`` (it must, to import this) and calls :func:`run`. Kept tiny and
standard library only: it is compiled, not cached, whenever bytecode writing is off.
"""

import sys

# Cache powercontext_hook's bytecode even under PYTHONDONTWRITEBYTECODE: compiling it
# costs milliseconds on every prompt.
sys.dont_write_bytecode = False

# The diagnostic line's ``event`` for each hook event (as powercontext_hook's own). Any
# other event (Copilot CLI's preCompact) asks no pack, so it has no line to write.
_DIAGNOSTIC_EVENTS = {"UserPromptSubmit": "context_prepare", "SessionStart": "context_session"}


def run(agent: str, event: str = "UserPromptSubmit") -> None:
    """Run the hook for ``agent`` and ``event``; exits 0 whatever happens."""
    try:
        from powercontext_hook import main
    except Exception:  # a broken install must not break the turn
        if event in _DIAGNOSTIC_EVENTS:
            sys.stderr.write(
                f'{{"component":"powercontext.{agent}.recall",'
                f'"event":"{_DIAGNOSTIC_EVENTS[event]}","outcome":"skipped",'
                '"http_status":null,"context_status":null,"content_bytes":null}\n'
            )
        sys.exit(0)
    main(agent, event)
