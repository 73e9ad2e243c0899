"""The embedding model's build: derives the committed int8 file from the shipped one.

Run by whoever publishes a release (``python -m modelbuild``), never by the server: the
runtime (``powercontext.embedding``) only loads the file this writes, checked against the
sha256 recorded beside it. Needs ``onnx`` (requirements-dev.txt), which the runtime does
not. ``quantize`` is the recipe, ``kernels`` its rewrite into ONNX Runtime's fused kernels,
``build`` writes the file and its manifest; docs/embedding.md describes them.
"""
