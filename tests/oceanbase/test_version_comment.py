"""Recognising OceanBase by ``@@version_comment``: pure parsing, so it runs on every
database (the rest of the backend's tests need a real OceanBase)."""

import pytest

from powercontext.db.backends.oceanbase.base import parse_version_comment


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("OceanBase 4.3.5.3 seekdb (r1.4.0.0) (Built 1-d0cb Sep  8 2026)", (4, 3, 5, 3)),
        ("OceanBase_CE 4.3.5.1 (r101000042025031818-a1b2) (Built Mar 18 2025)", (4, 3, 5, 1)),
        ("OceanBase 4.2.1.8 (r108000022024072217-xx) (Built Jul 22 2024)", (4, 2, 1, 8)),
        ("MySQL Community Server - GPL", None),
        ("mariadb.org binary distribution", None),
        ("", None),
    ],
)
def test_version_comment_names_oceanbase(comment, expected):
    assert parse_version_comment(comment) == expected
