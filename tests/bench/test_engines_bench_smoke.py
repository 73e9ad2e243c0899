"""bench/engines_bench.py's small configuration runs in CI, so it cannot rot. Only that it
completes, prints its table and leaves nothing behind is checked: its figures are
measurements, not targets."""

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import sqlite_only

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 600


def _processes_using(path: Path) -> list[int]:
    """Live processes whose command line or environment names ``path``."""
    needle = str(path).encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if (
                needle in (proc / "cmdline").read_bytes()
                or needle in (proc / "environ").read_bytes()
            ):
                found.append(int(proc.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


@pytest.mark.slow
@sqlite_only("the bench starts its own seekdb beside SQLite; once, in the SQLite pass, is enough")
@pytest.mark.skipif(
    importlib.util.find_spec("pylibseekdb") is None or importlib.util.find_spec("MySQLdb") is None,
    reason="needs requirements-oceanbase.txt and pylibseekdb",
)
def test_engines_bench_ci_configuration_completes_and_prints_the_table(tmp_path):
    work = tmp_path / "bench"
    process = subprocess.Popen(
        [sys.executable, "bench/engines_bench.py", "--ci", "--work-dir", str(work)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so a hung run can be ended whole
    )
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        # SIGTERM first: the bench then stops its servers and seekdb and deletes its data.
        os.killpg(process.pid, signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
        pytest.fail(f"the bench did not finish within {TIMEOUT}s:\n{out[-3000:]}{err[-3000:]}")

    assert process.returncode == 0, err[-3000:]
    assert "| measure" in out
    assert "| SQLite" in out
    assert "| OceanBase (seekdb)" in out
    assert "| OceanBase / SQLite" in out
    for measure in (
        "| remember p50 ms (n=30)",
        "| remember p95 ms (n=30)",
        "| remember p99 ms (n=30)",
        "| prepare p50 ms (n=30)",
        "| prepare p95 ms (n=30)",
        "| prepare p99 ms (n=30)",
        "| packs ready",
        "| same entries cited, same prompt",
    ):
        assert measure in out, measure
    assert out.count("300 entries through the services in-process") == 2

    # Nothing left behind: seekdb, its holder and both servers stopped, the data deleted.
    deadline = time.monotonic() + 15
    while _processes_using(work) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_using(work) == []
    assert not work.exists()
