"""Two reviewers approving the same candidate at the same moment, through two real server
processes sharing one database (a SQLite file, or OceanBase): exactly one wins, the other
gets a clear conflict, and exactly one Experience revision exists."""

import json
import threading

import pytest

from tests.experience.conftest import SOURCE, proposal
from tests.experience.servers import Server, manage

ROUNDS = 6
SCOPE = "race-scope"


@pytest.fixture
def servers(tmp_path, transactional_db):
    # transactional_db: on OceanBase the servers' own database is created through the
    # suite's connection (their data never touches the test database).
    started = []
    try:
        started.append(Server(tmp_path))
        started.append(Server(tmp_path))  # the database is migrated by now
        yield started
    finally:
        for server in started:
            server.stop()


@pytest.mark.slow
def test_concurrent_approvals_of_one_candidate_have_one_winner(servers, tmp_path):
    tokens = [
        manage(tmp_path, "reviewer_token", name, "--create").strip() for name in ("ann", "bob")
    ]
    capture = {"scope_id": SCOPE, "source_id": SOURCE["source_id"], "content": "a prompt"}
    assert servers[0].post("v1/sources/content", capture)[0] == 202
    candidates = []
    for round_ in range(ROUNDS):
        status, candidate = servers[0].post(
            "v1/experience/propose",
            {"scope_id": SCOPE, "proposal": proposal(f"Lesson {round_}."), "source_refs": [SOURCE]},
        )
        assert status == 201, candidate
        candidates.append(candidate)

    for candidate in candidates:
        barrier = threading.Barrier(2)
        results = [None, None]

        def approve(index, candidate=candidate, barrier=barrier, results=results):
            body = {
                "scope_id": SCOPE,
                "candidate_id": candidate["candidate_id"],
                "expected_version": 1,
            }
            barrier.wait()
            results[index] = servers[index].post(
                "v1/artifact-candidates/approve", body, token=tokens[index]
            )

        threads = [threading.Thread(target=approve, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        statuses = sorted(status for status, _ in results)
        assert statuses == [200, 409], results
        (winner,) = [body for status, body in results if status == 200]
        (loser,) = [body for status, body in results if status == 409]
        assert loser["error"]["code"] == "candidate_terminal"
        assert winner["status"] == "approved"

    # Read back through the servers' own database, whichever engine it is.
    counts = json.loads(
        manage(
            tmp_path,
            "shell",
            "--verbosity=0",
            "-c",
            "import json\n"
            "from django.db.models import Count\n"
            "from powercontext.models import ArtifactRevision\n"
            "from experience.models import Candidate\n"
            "print(json.dumps({\n"
            "  'revisions': list(ArtifactRevision.objects.filter(family='experience')\n"
            "      .values('artifact_id').annotate(n=Count('id')).values_list('n', flat=True)),\n"
            "  'decided': list(Candidate.objects.values_list('status', 'decided_by_username')),\n"
            "}))",
        )
    )
    assert len(counts["revisions"]) == ROUNDS
    assert all(count == 1 for count in counts["revisions"])
    assert all(status == "approved" for status, _ in counts["decided"])
    assert {who for _, who in counts["decided"]} <= {"ann", "bob"}
