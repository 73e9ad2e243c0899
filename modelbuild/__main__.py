"""``python -m modelbuild``: rebuild the committed embedding model and its manifest.

    .venv/bin/python -m modelbuild              # into powercontext/embedding/files/
    .venv/bin/python -m modelbuild --check      # into a temporary directory: the same bytes?
    .venv/bin/python -m modelbuild --calibrate  # measure the calibration figures again too

Needs the development requirements (``onnx``); docs/embedding.md says when to run it.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from modelbuild.build import MODEL_FILE, build, workspace
from powercontext.embedding.model_file import FILES, Manifest


def _stop(signum: int, frame: FrameType | None) -> None:
    # An exit, so that the work directory and any temporary file are removed on the way.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m modelbuild", description=__doc__)
    parser.add_argument(
        "--check",
        action="store_true",
        help="build into a temporary directory and compare with the committed file",
    )
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="measure the calibration figures again on this machine and record them",
    )
    parser.add_argument("--into", type=Path, help="build into this directory instead")
    arguments = parser.parse_args(argv)
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # as the runtime does (model.py)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("modelbuild").setLevel(logging.INFO)  # not the quantiser's chatter
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stop)
    if arguments.check:
        committed = Manifest.read()
        # In a work directory of its own (not a plain temporary one), so that what a
        # check killed outright (SIGKILL) left is swept by the next build or check.
        with workspace() as work:
            into = work / "check"
            manifest = build(into)
            same = (into / MODEL_FILE).read_bytes() == (FILES / committed.model).read_bytes()
        print(f"built {manifest.sha256}, committed {committed.sha256}")
        print("the same bytes" if same else "DIFFERENT bytes")
        return 0 if same else 1
    manifest = build(arguments.into or FILES, calibrate=arguments.calibrate)
    print(manifest.to_json(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
