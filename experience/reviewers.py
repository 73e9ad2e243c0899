"""Who may decide candidates: the one rule behind the API's, the admin's and the
services' checks, apart from the services so that the personal tokens
(``experience.tokens``) can apply it without importing the writes that use it."""

from typing import Any

from experience.models import REVIEW_PERMISSION
from powercontext.exceptions import PermissionDenied


def can_review(user: Any) -> bool:
    """Whether ``user`` may decide candidates: an active user with the review permission.
    The one rule behind the API's, the admin's and the services' checks."""
    return bool(
        user is not None and getattr(user, "is_active", False) and user.has_perm(REVIEW_PERMISSION)
    )


def require_reviewer(user: Any) -> None:
    """PermissionDenied unless ``can_review(user)``."""
    if can_review(user):
        return
    if user is None or not getattr(user, "is_active", False):
        raise PermissionDenied("Deciding a candidate needs a reviewer.")
    raise PermissionDenied("This user may not decide candidates.")
