"""The desk's links to an entry version's page. The admin reads ``_22`` in a URL's object
id as '"' (and ``_23``, ``_24``, ``_25``, ``_26``, ``_40`` as other characters), so a
link must quote the id: one random version id in about forty has such a pair after its
last underscore, and its unquoted link led back to the admin's index."""

import re
from types import SimpleNamespace

import pytest
from django.contrib.admin.utils import unquote
from django.urls import resolve

from contextpack.preview import _link
from memory.admin import entry_version_link
from powercontext.desk import change_url

IDS = ["mem_ver_22ab" + "0" * 28, "mem_ver_40cd" + "0" * 28, "mem_ver_" + "f" * 32]


def _object_id(href):
    return unquote(resolve(href).kwargs["object_id"])


@pytest.mark.parametrize("version_id", IDS)
def test_an_entry_version_link_opens_that_version(version_id):
    href = re.search(r'href="([^"]+)"', str(entry_version_link(version_id))).group(1)
    assert _object_id(href) == version_id


@pytest.mark.parametrize("version_id", IDS)
def test_the_pack_previews_link_opens_that_version(version_id):
    hit = SimpleNamespace(family="memory", citation={"entry_version_id": version_id})
    assert _object_id(_link(hit)) == version_id


@pytest.mark.parametrize("candidate_id", ["cand_22" + "0" * 30, "cand_" + "f" * 32])
def test_every_desk_link_quotes_its_key(candidate_id):
    # The one helper the desks build their links with (an Experience candidate's page here).
    href = change_url("admin:experience_candidate_change", candidate_id)
    assert _object_id(href) == candidate_id
