"""``manage.py reviewer <username>``: one command makes a reviewer who can log in to the
review desk (the admin) and decide candidates over HTTP with a personal token.

    manage.py reviewer rita                      # asks for a password (twice)
    echo "$PW" | manage.py reviewer rita --password-stdin
    manage.py reviewer rita --set-password-link  # prints a one-time link instead

The user is created when missing (an existing one is updated: made staff and put in the
reviewer group; a superuser stays one). The group's permissions decide what the desk shows:
the review queue, Experience and Memory, never user management (only a superuser, made by
``manage.py createsuperuser``, sees that).
"""

import getpass
import os
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from experience.services import REVIEWER_GROUP, reviewer_token_issue
from powercontext.server_records import running_servers
from powercontext.startup import migrate_if_needed

DEFAULT_URL = "http://127.0.0.1:8000"


class Command(BaseCommand):
    help = (
        "Create (or update) a reviewer: a staff user in the reviewer group who can log in to "
        "the review desk, with a personal API token (printed once)."
    )
    # Tests hand the command their own stdin, as Django's createsuperuser does.
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("username")
        how = parser.add_mutually_exclusive_group()
        how.add_argument(
            "--password-stdin",
            action="store_true",
            help="Read the password from the first line of standard input (for scripts).",
        )
        how.add_argument(
            "--set-password-link",
            action="store_true",
            help="Set no password; print a one-time link where the reviewer sets their own.",
        )
        parser.add_argument(
            "--url",
            default=None,
            help="The server's address, for the links printed (default: POWERCONTEXT_URL, "
            "else the address of the server running on this data directory, else "
            f"{DEFAULT_URL}).",
        )
        parser.add_argument(
            "--no-token", action="store_true", help="Do not issue a personal API token."
        )

    def handle(self, *args, username, password_stdin, set_password_link, url, no_token, **opts):
        migrate_if_needed(stderr=self.stderr)  # works before the first `serve` too
        stdin = opts.get("stdin") or sys.stdin
        base = (url or os.environ.get("POWERCONTEXT_URL") or _served_url()).rstrip("/")
        user_model = get_user_model()
        user = user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).first()
        created = user is None
        if created:
            user = user_model(**{user_model.USERNAME_FIELD: username})
            user.set_unusable_password()

        password = None
        if password_stdin:
            password = stdin.readline().rstrip("\r\n")
        elif not set_password_link:
            if not stdin.isatty():
                raise CommandError(
                    "No terminal to ask for a password: use --password-stdin or "
                    "--set-password-link."
                )
            password = self.ask_password(username)
        if password is not None:
            if not password:
                raise CommandError("The password is empty.")
            try:
                password_validation.validate_password(password, user)
            except ValidationError as error:
                raise CommandError(" ".join(error.messages)) from None
            user.set_password(password)

        with transaction.atomic():
            user.is_staff = True
            user.is_active = True
            user.save()
            user.groups.add(Group.objects.get(name=REVIEWER_GROUP))
        issued = None if no_token else reviewer_token_issue(username=username)

        out = self.stdout
        out.write(f"{'Created' if created else 'Updated'} reviewer {username}.")
        out.write(f"Review desk: {base}{reverse('admin:index')} (log in as {username})")
        if set_password_link:
            out.write(
                "Set the password here (the link works once, for "
                f"{self.link_days()} days): {base}{self.reset_path(user)}"
            )
        if issued is not None:
            out.write(f"Personal API token (shown once; replaces any earlier one): {issued.token}")

    def ask_password(self, username: str) -> str:
        for _ in range(3):
            first = getpass.getpass(f"Password for {username}: ")
            second = getpass.getpass("Password (again): ")
            if first == second:
                return first
            self.stderr.write("The passwords differ; try again.")
        raise CommandError("The passwords differed three times.")

    @staticmethod
    def reset_path(user) -> str:
        # Django's password-reset token: bound to the current password hash and last
        # login, so it stops working once used, and expires after PASSWORD_RESET_TIMEOUT.
        return reverse(
            "password_reset_confirm",
            kwargs={
                "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
                "token": default_token_generator.make_token(user),
            },
        )

    @staticmethod
    def link_days() -> int:
        from django.conf import settings

        return max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)


def _served_url() -> str:
    """The address of the server that runs on this data directory (the newest, if
    several), as ``serve`` recorded it: the links must reach the port it really uses."""
    servers = running_servers(home=Path(settings.POWERCONTEXT_HOME))
    return servers[-1].url if servers else DEFAULT_URL
