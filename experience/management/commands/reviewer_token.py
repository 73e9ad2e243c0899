"""``manage.py reviewer_token <username> [--create] [--revoke]``: issue (print) or revoke a
reviewer's personal API token."""

from django.core.management.base import BaseCommand, CommandError

from experience.services import ReviewerNotFound, reviewer_token_issue, reviewer_token_revoke
from powercontext.startup import migrate_if_needed


class Command(BaseCommand):
    help = (
        "Issue a personal API token for a reviewer and print it (it is shown only once; a "
        "new one replaces the old). Deciding candidates over HTTP needs it."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--create",
            action="store_true",
            help="Create the user (in the 'Experience reviewers' group) if it does not exist.",
        )
        parser.add_argument("--revoke", action="store_true", help="Revoke the user's token.")

    def handle(self, *args, username, create, revoke, verbosity, **options):
        migrate_if_needed(stderr=self.stderr)  # works before the first `serve` too
        if revoke:
            if not reviewer_token_revoke(username=username):
                raise CommandError(f"{username} has no reviewer token.")
            if verbosity >= 1:
                self.stdout.write(f"Revoked the reviewer token of {username}.")
            return
        try:
            issued = reviewer_token_issue(username=username, create=create)
        except ReviewerNotFound:
            raise CommandError(f"No user {username!r}; use --create to create one.") from None
        if verbosity >= 1 and issued.user_created:
            self.stderr.write(f"Created user {username} in the reviewer group.")
        if not issued.can_review:
            self.stderr.write(
                f"Warning: {username} may not decide candidates yet: add them to the "
                "'Experience reviewers' group or grant experience.review_candidate."
            )
        self.stdout.write(issued.token)
