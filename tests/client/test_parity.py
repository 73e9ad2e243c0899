"""The client's shape: both flavours alike, one method per API operation, no Django."""

import inspect
import subprocess
import sys
from pathlib import Path

import yaml

from powercontext.client import AsyncPowerContextClient, PowerContextClient
from powercontext.client._core import OPERATIONS

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
        "import sys, powercontext.client; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True, timeout=60)
