"""The Experience family's archive streams (docs/portability.md): candidates and their
immutable versions. Approved Experience itself is the kernel's Artifact revisions
(family ``experience``), carried by the kernel's stream.

Left out: who decided, as a user of this server (``decided_by``; the name is kept in
``decided_by_username``), the reviewers' tokens (a credential of one server) and the
term statistics (derived, rebuilt on import).
"""

from collections.abc import Mapping
from typing import Any

from powercontext.archive.streams import Stream, register_left_out, register_stream

USERS = "a user of this server: users are not carried (decided_by_username keeps the name)"
# shared[...]: {candidate_id: version} of the scope's candidates.
CANDIDATES = "experience.candidates"


def register() -> None:
    register_stream(
        Stream(
            "experience.candidate",
            model="experience.Candidate",
            order=("candidate_id",),
            left_out={"decided_by": USERS},
            verifier="experience.archive.Candidates",
        )
    )
    register_stream(
        Stream(
            "experience.candidate_version",
            model="experience.CandidateVersion",
            order=("candidate_id", "version"),
            scope="candidate__scope_id",
            verifier="experience.archive.CandidateVersions",
        )
    )
    register_left_out(
        "experience.ReviewerToken", "a credential of one server, bound to one of its users"
    )
    register_left_out(
        "experience.ExperienceTermStat", "derived: counted from the heads, rebuilt on import"
    )


class Candidates:
    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.versions: dict[str, int] = shared.setdefault(CANDIDATES, {})

    def row(self, values: Mapping[str, Any]) -> str | None:
        self.versions[values["candidate_id"]] = values["version"]
        return None

    def end(self) -> str | None:
        return None


class CandidateVersions:
    """Each candidate of the scope has versions 1..n, n being the candidate's version."""

    def __init__(self, scope_id: str, shared: dict[str, Any]) -> None:
        self.candidates: dict[str, int] = shared.get(CANDIDATES, {})
        self.seen: set[str] = set()
        self.current: tuple[str, int] | None = None

    def row(self, values: Mapping[str, Any]) -> str | None:
        candidate, number = values["candidate_id"], values["version"]
        if candidate not in self.candidates:
            return "a version of a candidate not in this scope"
        problem = None
        if self.current is None or self.current[0] != candidate:
            problem = self._close()
            if number != 1:
                problem = problem or f"the candidate's first version is v{number}"
        elif number != self.current[1] + 1:
            problem = f"v{number} does not follow v{self.current[1]}"
        self.current = (candidate, number)
        self.seen.add(candidate)
        return problem

    def _close(self) -> str | None:
        if self.current is None:
            return None
        candidate, last = self.current
        if self.candidates[candidate] != last:
            return (
                f"candidate {candidate} is at version {self.candidates[candidate]}, "
                f"its versions end at v{last}"
            )
        return None

    def end(self) -> str | None:
        problem = self._close()
        missing = sorted(self.candidates.keys() - self.seen)
        if missing:
            problem = problem or f"candidate {missing[0]} has no versions"
        return problem
