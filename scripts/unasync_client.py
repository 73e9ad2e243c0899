"""Generate the synchronous Python client from the asyncio one.

    python scripts/unasync_client.py          # write client/powercontext_client/_sync/
    python scripts/unasync_client.py --check  # exit 1 if the committed file is stale

The asyncio client (``_async/client.py``) is the one source; unasync (the token rewriter
httpcore and urllib3 use) removes ``async``/``await`` and swaps the async names below for
their synchronous twins, and ruff formats the result as the rest of the code.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import unasync

PACKAGE = Path(__file__).resolve().parent.parent / "client" / "powercontext_client"
SOURCES = ["client.py"]
HEADER = (
    "# Generated from ../_async/{name} by scripts/unasync_client.py: do not edit; edit the\n"
    "# asyncio source and run the script again.\n"
)
RULE = unasync.Rule(
    "/_async/",
    "/_sync/",
    additional_replacements={
        "AsyncPowerContextClient": "PowerContextClient",
        "AsyncClient": "Client",
        "aclose": "close",
        "asyncio": "time",
    },
)


def generated(name: str) -> str:
    """The synchronous twin of ``_async/<name>``, formatted."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "_async" / name
        source.parent.mkdir()
        shutil.copyfile(PACKAGE / "_async" / name, source)
        unasync.unasync_files([str(source)], rules=[RULE])
        text = (Path(tmp) / "_sync" / name).read_text(encoding="utf-8")
    formatted = subprocess.run(  # noqa: S603 (this interpreter's own ruff)
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", name, "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return HEADER.format(name=name) + formatted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check, write nothing")
    check = parser.parse_args().check
    stale = []
    for name in SOURCES:
        target = PACKAGE / "_sync" / name
        text = generated(name)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(target)
        if not check:
            target.write_text(text, encoding="utf-8")
    if check and stale:
        for target in stale:
            print(f"{target} is stale: run python scripts/unasync_client.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
