"""Running a benchmark's small configuration as CI does: a real subprocess, bounded."""

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, *args: str, ci: bool = True) -> str:
    """Run ``bench/<script> --ci <args>`` (without ``--ci`` when not ``ci``: a run on the
    whole of small data) and return its stdout; fail on a non-zero exit."""
    completed = subprocess.run(
        [sys.executable, f"bench/{script}", *(["--ci"] if ci else []), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout
