#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main():
    """Run administrative tasks."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:
        raise ImportError(
            "Couldn't import Django. Are you sure it's installed and "
            "available on your PYTHONPATH environment variable? Did you "
            "forget to activate a virtual environment?"
        ) from exc
    try:
        execute_from_command_line(sys.argv)
    except Exception as error:
        # A database the settings point at but no command can use (unreachable, wrong
        # password, no driver) is a setting to fix: one message, no traceback.
        from server.database_errors import explain

        message = explain(error)
        if message is None:
            raise
        sys.exit(message)


if __name__ == "__main__":
    main()
