"""Personal API tokens (DESIGN.md §4, "Auth"; ``manage.py reviewer_token``).

A personal token authenticates a person. With the review permission they may read and
decide candidates; without it they may only read. Neither writes Memory, proposes or
captures: that is the agent token's work (``powercontext.api.auth.Role``, on each view).

``settings.POWERCONTEXT_REVIEWER_TOKEN_FINDER`` points at :func:`person_for_token`, which
``powercontext.api.auth`` calls for a bearer that is not the agents' token. Only a SHA-256
of each token is stored: tokens are 256 random bits, so an unsalted hash is enough to
make a leaked table useless, and it keeps the lookup an indexed equality.
"""

import hashlib

TOKEN_PREFIX = "pcr_"  # noqa: S105 - a public prefix, not a secret


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def reviewer_for_token(token: str):
    """The active user whose personal token this is, or None.

    The user's review permission is not checked here: a reviewer whose permission was
    withdrawn is still who they are (and may read), but gets 403 on decisions.
    """
    if not token.startswith(TOKEN_PREFIX):
        return None
    from experience.models import ReviewerToken

    found = (
        ReviewerToken.objects.select_related("user")
        .filter(token_hash=token_hash(token), user__is_active=True)
        .first()
    )
    return None if found is None else found.user


def person_for_token(token: str):
    """(user, whether they may decide candidates) for a personal token, or None."""
    user = reviewer_for_token(token)
    if user is None:
        return None
    from experience.reviewers import can_review

    return user, can_review(user)
