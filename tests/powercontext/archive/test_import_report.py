"""What ``manage.py import`` prints about the vectors it embedded."""

import pytest

from tests.powercontext.archive.archive_history import HOSTILE_SCOPE, PLAIN_SCOPE
from tests.powercontext.archive.test_archive import archive, history, reviewer_api, run, wipe

__all__ = ["archive", "history", "reviewer_api"]  # fixtures, used by name


@pytest.mark.django_db(transaction=True)
def test_the_vector_report_names_the_scope_of_each_line(archive):
    wipe()
    output = run("import", archive)
    lines = [line for line in output.splitlines() if "vector(s) embedded" in line]
    assert lines
    for line in lines:
        assert line.lstrip().startswith((repr(HOSTILE_SCOPE)[:40], repr(PLAIN_SCOPE))), line
    assert any(repr(PLAIN_SCOPE) in line for line in lines)
