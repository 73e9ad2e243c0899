"""Why the semantic channel cannot embed: each says so in its message, which
``/health/ready`` shows; search then answers lexically."""


class EmbeddingsUnavailable(RuntimeError):
    """The semantic channel cannot embed: switched off, or its model cannot be loaded."""


class EmbeddingsDisabled(EmbeddingsUnavailable):
    """``POWERCONTEXT_EMBEDDINGS=off``: the operator switched the channel off."""


class EmbeddingModelMissing(EmbeddingsUnavailable):
    """A package the model needs is not installed, or one of its files is missing."""


class EmbeddingModelMismatch(EmbeddingsUnavailable):
    """A model file is not the one recorded (its sha256 differs): damaged, replaced, or of
    another release. It is never run."""


class EmbeddingModelUnloadable(EmbeddingsUnavailable):
    """The recorded model file could not be loaded by the installed ONNX Runtime."""
