"""The semantic channel's embedding model: a committed model file, checked, loaded, run.

``model`` is the process-wide model and what it embeds, ``model_file`` which file runs and
the check against its recorded sha256, ``wordpiece`` the tokenizer and pooling around it,
``vector_formats`` a vector as each engine stores it; ``files/`` holds the model, its
vocabulary and the manifest. The model is built ahead of time by ``modelbuild`` (not part
of the runtime), never here. docs/embedding.md describes the model and its figures.
"""

from powercontext.embedding.exceptions import (
    EmbeddingModelMismatch,
    EmbeddingModelMissing,
    EmbeddingModelUnloadable,
    EmbeddingsDisabled,
    EmbeddingsUnavailable,
)
from powercontext.embedding.model import (
    Embedder,
    TokenStates,
    embedder,
    enabled,
    reset_for_tests,
)
from powercontext.embedding.vector_formats import to_oceanbase_vector, to_sqlite_vec

__all__ = [
    "Embedder",
    "EmbeddingModelMismatch",
    "EmbeddingModelMissing",
    "EmbeddingModelUnloadable",
    "EmbeddingsDisabled",
    "EmbeddingsUnavailable",
    "TokenStates",
    "embedder",
    "enabled",
    "reset_for_tests",
    "to_oceanbase_vector",
    "to_sqlite_vec",
]
