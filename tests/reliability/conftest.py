"""Running the reliability benchmarks' small configurations as tests."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import engine

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, tmp_path: Path, *extra: str, timeout: float = 300) -> dict:
    """Run ``bench/<script> --ci`` on the suite's engine; its JSON result.

    On OceanBase the benchmark creates (and drops) a database of its own on the suite's
    OceanBase rather than starting a second seekdb.
    """
    out = tmp_path / "result.json"
    args = [
        sys.executable,
        f"bench/{script}",
        "--ci",
        "--engine",
        engine(),
        "--data-dir",
        str(tmp_path / "data"),
        "--json",
        str(out),
        *extra,
    ]
    if engine() == "oceanbase":
        args += ["--oceanbase-url", os.environ["POWERCONTEXT_DATABASE_URL"]]
    completed = subprocess.run(
        args, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    report = completed.stdout[-6000:] + completed.stderr[-6000:]
    assert out.exists(), report
    (result,) = json.loads(out.read_text(encoding="utf-8"))
    result["report"] = report
    result["returncode"] = completed.returncode
    return result
