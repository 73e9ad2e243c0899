"""The committed model and its build (``python -m modelbuild``): the file is the recorded
one, the build gives it again byte for byte, and a build stopped midway leaves nothing."""

import ast
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from modelbuild import build
from powercontext.embedding.model_file import FILES, MANIFEST_NAME, Manifest

REPO = Path(__file__).resolve().parents[2]
# What a user installs and runs: every package but the build, the tests and the benches.
RUNTIME = ("powercontext", "memory", "experience", "contextpack", "hooks", "server", "client")
BUILD_ONLY = ("modelbuild", "onnx", "onnxruntime.quantization")


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append(node.module)
    return found


def test_the_runtime_never_imports_the_build_or_onnx():
    files = [path for package in RUNTIME for path in (REPO / package).rglob("*.py")]
    assert REPO / "powercontext" / "embedding" / "model.py" in files
    wrong = [
        f"{path.relative_to(REPO)}: {module}"
        for path in files
        for module in _imports(path)
        if any(module == name or module.startswith(f"{name}.") for name in BUILD_ONLY)
    ]
    assert not wrong, wrong


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_committed_files_are_the_recorded_ones():
    manifest = Manifest.read()
    assert _sha256(FILES / manifest.model) == manifest.sha256
    assert _sha256(FILES / manifest.vocabulary) == manifest.vocabulary_sha256
    assert manifest.model == build.MODEL_FILE
    # The shipped file the build starts from is the one its package publishes.
    source, version, published = build.source_file()
    assert (manifest.source_version, manifest.source_sha256) == (version, published)
    assert _sha256(source) == published


def _same_tools() -> str | None:
    """Why a rebuild here cannot be expected to give the committed bytes, if it cannot."""
    import onnx
    import onnxruntime

    built_with = Manifest.read().built_with
    here = {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__}
    if here != built_with:
        return f"built with {built_with}, this environment has {here} (requirements pin them)"
    return None


def test_the_build_gives_the_committed_file_byte_for_byte(tmp_path):
    """From the recorded calibration figures, on whatever CPU this runs: no step that
    reaches the bytes depends on how the CPU rounds."""
    if reason := _same_tools():
        pytest.skip(reason)
    manifest = build.build(tmp_path)
    assert (tmp_path / build.MODEL_FILE).read_bytes() == (FILES / build.MODEL_FILE).read_bytes()
    assert manifest == Manifest.read()
    assert (tmp_path / MANIFEST_NAME).read_text() == (FILES / MANIFEST_NAME).read_text()
    assert sorted(path.name for path in tmp_path.iterdir()) == [build.MODEL_FILE, MANIFEST_NAME]


def test_a_source_that_is_not_the_published_file_is_refused(tmp_path, monkeypatch):
    planted = tmp_path / "model.onnx"
    planted.write_bytes(b"not the model")
    monkeypatch.setattr(build, "source_file", lambda: (planted, "1.0.0", "0" * 64))
    with pytest.raises(build.BuildFailed, match="publishes"):
        build.build(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_file_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    target = tmp_path / "model.onnx"
    target.write_bytes(b"old")
    build.write_whole(target, b"new")
    assert target.read_bytes() == b"new"
    assert oct(target.stat().st_mode & 0o777) == "0o644"

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        build.write_whole(target, b"newer")
    assert target.read_bytes() == b"new"
    assert [path.name for path in tmp_path.iterdir()] == ["model.onnx"]  # no temporary left


def test_a_killed_builds_work_directory_is_swept_a_running_ones_is_not(tmp_path):
    killed = tmp_path / f"{build.WORK_PREFIX}killed"
    killed.mkdir()
    (killed / build.LOCK_NAME).write_text("")
    (killed / "folded").write_bytes(b"x" * 1000)
    running = tmp_path / f"{build.WORK_PREFIX}running"
    running.mkdir()
    with (running / build.LOCK_NAME).open("w") as lock:
        assert build._lock(lock)
        starting = tmp_path / f"{build.WORK_PREFIX}starting"  # no lock yet, an instant old
        starting.mkdir()
        assert build.sweep(tmp_path) == [killed]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([running.name, starting.name])


def test_the_workspace_takes_the_libraries_temporary_files_and_is_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with build.workspace() as work:
        assert work.parent == tmp_path
        assert Path(tempfile.mkdtemp()).parent == work
        (work / "folded").write_bytes(b"x")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError, match="failed"), build.workspace():
        raise RuntimeError("the derivation failed")
    assert list(tmp_path.iterdir()) == []


def _directories(path: Path) -> list[Path]:
    """What a build could have left in a temporary directory: directories (the Python
    start-up of this environment may drop a small file of its own there)."""
    return [item for item in path.iterdir() if item.is_dir()]


def _written(scratch: Path) -> int:
    """The bytes the build's work directories in ``scratch`` hold now (files may vanish
    while they are counted)."""
    total = 0
    for path in scratch.glob(f"{build.WORK_PREFIX}*/**/*"):
        with contextlib.suppress(FileNotFoundError):
            total += path.stat().st_size if path.is_file() else 0
    return total


def _start_build(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, scratch = tmp_path / "out", tmp_path / "tmp"
    out.mkdir(parents=True)
    scratch.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "modelbuild", "--into", str(out)],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    # Midway: the work directory holds the folded float graph (about 90 MB).
    deadline = time.monotonic() + 120
    while not list(scratch.glob(f"{build.WORK_PREFIX}*/folded")):
        assert process.poll() is None, "the build ended before it started working"
        assert time.monotonic() < deadline, "the build never started working"
        time.sleep(0.05)
    return process, out, scratch


@pytest.mark.slow
def test_a_build_stopped_midway_leaves_nothing_behind(tmp_path):
    """Finding 3 of issue 28: a derivation killed midway left a 90 MB directory that was
    never swept. A stopped build (SIGTERM) removes its work directory on the way out and
    has written nothing; one killed outright (SIGKILL) has written nothing either, and the
    next build removes what it left (here: the sweep the next build starts with)."""
    process, out, scratch = _start_build(tmp_path)
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 128 + signal.SIGTERM
    assert _directories(scratch) == []
    assert list(out.iterdir()) == []

    process, out_killed, scratch = _start_build(tmp_path / "again")
    # Killed once the folded graph is well under way (an 8 MiB first write was seen when
    # killed at once), so that there is something substantial to sweep.
    deadline = time.monotonic() + 120
    while _written(scratch) <= 10_000_000:
        assert process.poll() is None, "the build ended before it was killed"
        assert time.monotonic() < deadline, "the build never wrote 10 MB"
        time.sleep(0.05)
    process.kill()
    process.wait(60)
    assert list(out_killed.iterdir()) == []
    (left,) = _directories(scratch)
    assert _written(scratch) > 10_000_000
    assert build.sweep(scratch) == [left]
    assert _directories(scratch) == []


def test_a_check_builds_in_a_swept_work_directory(tmp_path, monkeypatch):
    """Issue 38: ``--check`` built into a plain temporary directory, which nothing swept
    when the check was killed outright; now it builds inside a locked work directory
    (and the libraries' native temporary files follow ``TMPDIR`` there), which the next
    build or check sweeps."""
    from modelbuild import __main__ as cli

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen = {}

    def fake_build(into, **kwargs):
        seen["into"] = into
        seen["tmpdir"] = os.environ.get("TMPDIR")
        work = into.parent
        with (work / build.LOCK_NAME).open("a") as lock:
            seen["locked"] = not build._lock(lock, wait=False)
        into.mkdir()
        (into / build.MODEL_FILE).write_bytes(b"not the model")
        return Manifest.read()

    monkeypatch.setattr(cli, "build", fake_build)
    assert cli.main(["--check"]) == 1
    assert seen["into"].parent.name.startswith(build.WORK_PREFIX)
    assert seen["into"].parent.parent == tmp_path
    assert seen["locked"]  # a running check's directory is not swept
    assert seen["tmpdir"] == str(seen["into"].parent)
    assert list(tmp_path.iterdir()) == []  # removed when the check ended
