"""The client's shape: both flavours alike and from one source, one method per API
operation, no Django, installable on its own."""

import inspect
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

from powercontext_client import AsyncPowerContextClient, PowerContextClient
from powercontext_client._core import OPERATIONS

REPO_ROOT = Path(__file__).resolve().parents[2]


def public_methods(cls):
    return {
        name: member
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name not in ("close", "aclose")
    }


def test_sync_and_async_clients_have_the_same_methods_and_signatures():
    sync, aio = public_methods(PowerContextClient), public_methods(AsyncPowerContextClient)
    assert sync.keys() == aio.keys()
    for name, method in sync.items():
        assert inspect.signature(method) == inspect.signature(aio[name]), name
        assert inspect.iscoroutinefunction(aio[name]), name
        assert not inspect.iscoroutinefunction(method), name
    assert inspect.signature(PowerContextClient.__init__).parameters.keys() == (
        inspect.signature(AsyncPowerContextClient.__init__).parameters.keys()
    )


def test_one_method_per_operation():
    assert set(public_methods(PowerContextClient)) == set(OPERATIONS)


def test_operations_match_the_committed_openapi_document():
    """The client's operations are exactly those the OpenAPI document describes, with the
    same name (its operationId), method and path."""
    document = yaml.safe_load((REPO_ROOT / "openapi" / "powercontext.yaml").read_text())
    described = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            described[operation["operationId"]] = (method.upper(), path)
    assert set(described) == set(OPERATIONS)
    for name, (method, path) in described.items():
        assert (OPERATIONS[name].method, OPERATIONS[name].path) == (method, path), name


def test_the_client_imports_without_django():
    code = (
        "import sys, powercontext_client; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True, timeout=60)


def test_the_sync_client_is_generated_from_the_async_one():
    """``_sync/client.py`` is what scripts/unasync_client.py makes of the asyncio source."""
    result = subprocess.run(
        [sys.executable, "scripts/unasync_client.py", "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_the_client_installs_with_pip_into_a_fresh_virtualenv(tmp_path):
    """``pip install ./client`` into an empty virtualenv (httpx comes from the package
    index, as for a user), then both clients import and Django is nowhere."""
    # From a copy, so the build leaves nothing in the checkout.
    source = shutil.copytree(
        REPO_ROOT / "client", tmp_path / "client", ignore=shutil.ignore_patterns("*.egg-info")
    )
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(source)],
        check=True,
        timeout=300,
    )
    code = (
        "import importlib.util, powercontext_client as pc; "
        "assert importlib.util.find_spec('django') is None; "
        "assert pc.__file__.startswith(sys.prefix), pc.__file__; "
        "print(pc.PowerContextClient.__name__, pc.AsyncPowerContextClient.__name__)"
    )
    out = subprocess.run(
        [str(python), "-c", "import sys; " + code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert out.split() == ["PowerContextClient", "AsyncPowerContextClient"]
