"""The desk's pack preview searches each family once: the hits and every candidate's
verdict come from the same search (issue 39: it used to search each family twice)."""

import pytest

from contextpack import application
from powercontext.search.term_counts import TermCounts

pytestmark = pytest.mark.django_db


def test_the_preview_searches_each_family_once(remember, monkeypatch):
    remember("Releases are cut on Tuesdays by the release captain.", scope_id="once")
    planned: list[str] = []
    real = TermCounts.search_plan

    def counted(self, **kwargs):
        # Every search plans once, with its index's term counts.
        planned.append(self.model._meta.label)
        return real(self, **kwargs)

    monkeypatch.setattr(TermCounts, "search_plan", counted)
    prepared, explanation = application.explain_context(
        scope_id="once", query="When are releases cut?", max_bytes=8000
    )
    assert sorted(planned) == ["experience.ExperienceTermStat", "memory.MemoryTermStat"]
    # The verdicts came with the hits: the one entry is there with its reason.
    assert prepared.items_included == 1
    assert [row.admitted for row in explanation.candidates] == [True]
