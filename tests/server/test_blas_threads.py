"""NumPy's BLAS runs on one thread in a server process (``server.settings``): a pool of
OpenBLAS threads splitting a prepare's small products cost it 500 ms under load."""

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

# What a server process does first (manage.py, server.wsgi): settings, then the apps, then
# a product. Prints what the BLAS library was told and the threads it reports.
PROBE = """
import json, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "server.settings"
import django
django.setup()
import numpy
numpy.ones((64, 384), dtype=numpy.float32) @ numpy.ones((384, 64), dtype=numpy.float32)
sys.path.insert(0, sys.argv[1])
from test_blas_threads import openblas_threads
print(json.dumps({
    "variable": os.environ.get("OPENBLAS_NUM_THREADS"),
    "threads": openblas_threads(),
}))
"""


def openblas_threads() -> int | None:
    """The threads the OpenBLAS NumPy loaded says it uses, or None when NumPy's BLAS is
    not an OpenBLAS this process can find (another platform's wheel)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    paths = {line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()}
    for path in sorted(paths):
        library = ctypes.CDLL(path)
        for name in (
            "scipy_openblas_get_num_threads64_",
            "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_",
            "openblas_get_num_threads",
        ):
            function = getattr(library, name, None)
            if function is not None:
                function.restype = ctypes.c_int
                return int(function())
    return None


def _probe(tmp_path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env.update(POWERCONTEXT_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPOSITORY), **extra)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(Path(__file__).parent)],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_server_process_runs_numpys_blas_on_one_thread(tmp_path):
    found = _probe(tmp_path)

    assert found["variable"] == "1"
    if found["threads"] is None and os.environ.get("CI") != "true":
        pytest.skip("NumPy's BLAS here is not an OpenBLAS this test can ask")
    assert found["threads"] == 1


def test_the_operators_own_setting_wins(tmp_path):
    found = _probe(tmp_path, OPENBLAS_NUM_THREADS="2")

    assert found["variable"] == "2"
    if found["threads"] is None and os.environ.get("CI") != "true":
        pytest.skip("NumPy's BLAS here is not an OpenBLAS this test can ask")
    assert found["threads"] == 2
