"""Fixtures shared with the Experience tests: reviewers, proposals and approvals (the pack
preview needs approved Experience and a reviewer at the desk)."""

from tests.experience.conftest import (  # noqa: F401
    approve,
    propose,
    reviewer,
    reviewer_api,
    reviewer_group,
)
