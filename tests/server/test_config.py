"""``server.config``: a private data directory, private files, a sound secret key."""

import errno
import logging
import os
import sqlite3
import stat
import threading

import pytest

from server import config


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    """The usual umask (022): what the defaults would give is readable by everyone."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


# -- the data directory ----------------------------------------------------------------


def test_a_new_data_directory_is_private(tmp_path, monkeypatch, open_umask):
    home = tmp_path / "fresh" / "powercontext"
    monkeypatch.setenv("POWERCONTEXT_HOME", str(home))

    assert config.data_home() == home.resolve()
    assert _mode(home) == 0o700
    assert _mode(home / "static") == 0o700


def test_an_open_data_directory_is_tightened_with_one_warning(
    tmp_path, monkeypatch, open_umask, caplog
):
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    monkeypatch.setenv("POWERCONTEXT_HOME", str(home))

    with caplog.at_level(logging.WARNING, logger="powercontext.config"):
        config.data_home()
    assert _mode(home) == 0o700
    [record] = caplog.records
    assert record.getMessage() == (
        f"Data directory {home.resolve()} was readable by other users (mode 0755); now 0700."
    )

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="powercontext.config"):
        config.data_home()
    assert caplog.records == []  # already private: nothing to say


# -- the SQLite files ------------------------------------------------------------------


def test_the_database_and_its_wal_files_are_created_private(tmp_path, monkeypatch, open_umask):
    # The embedded default, whatever database the suite itself runs on.
    monkeypatch.delenv("POWERCONTEXT_DATABASE_URL", raising=False)
    name = config.database_config(tmp_path)["NAME"]
    assert not (tmp_path / "powercontext.sqlite3").exists()  # reading settings creates none
    config.protect_sqlite_files(name, create=True)
    assert _mode(tmp_path / "powercontext.sqlite3") == 0o600

    # SQLite creates -wal and -shm itself, with the database file's mode.
    connection = sqlite3.connect(name)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE t (x)")
    connection.execute("INSERT INTO t VALUES (1)")
    connection.commit()
    try:
        for suffix in ("", "-wal", "-shm"):
            assert _mode(tmp_path / f"powercontext.sqlite3{suffix}") == 0o600, suffix
    finally:
        connection.close()


def test_existing_open_database_files_are_tightened(tmp_path, monkeypatch, open_umask):
    monkeypatch.delenv("POWERCONTEXT_DATABASE_URL", raising=False)
    for suffix in ("", "-wal", "-shm"):
        path = tmp_path / f"powercontext.sqlite3{suffix}"
        path.write_bytes(b"")
        path.chmod(0o644)

    config.database_config(tmp_path)

    for suffix in ("", "-wal", "-shm"):
        assert _mode(tmp_path / f"powercontext.sqlite3{suffix}") == 0o600, suffix


# -- the secret key --------------------------------------------------------------------


def test_a_new_secret_key_is_kept_private_and_reused(tmp_path, monkeypatch, open_umask):
    monkeypatch.delenv("POWERCONTEXT_SECRET_KEY", raising=False)
    key = config.secret_key(tmp_path)

    path = tmp_path / "secret_key"
    assert path.read_text(encoding="ascii") == key
    assert len(key) >= config.SECRET_KEY_MIN_CHARS
    assert _mode(path) == 0o600
    assert config.secret_key(tmp_path) == key
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret_key"]  # no temporary left


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_a_key_that_cannot_be_written_leaves_no_key_file(tmp_path, monkeypatch, failing):
    monkeypatch.delenv("POWERCONTEXT_SECRET_KEY", raising=False)

    def disk_full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(config.os, failing, disk_full)
    with pytest.raises(OSError, match="No space left"):
        config.secret_key(tmp_path)
    assert list(tmp_path.iterdir()) == []  # neither an empty key file nor a temporary

    monkeypatch.undo()  # the disk has room again: the next start writes a good key
    assert len(config.secret_key(tmp_path)) >= config.SECRET_KEY_MIN_CHARS


@pytest.mark.parametrize("content", ["", "\n", "short-key\n"])
def test_an_empty_or_short_key_file_is_refused_with_what_to_do(tmp_path, monkeypatch, content):
    monkeypatch.delenv("POWERCONTEXT_SECRET_KEY", raising=False)
    (tmp_path / "secret_key").write_text(content, encoding="ascii")

    with pytest.raises(SystemExit) as refused:
        config.secret_key(tmp_path)
    message = str(refused.value)
    assert "\n" not in message
    assert str(tmp_path / "secret_key") in message
    assert "Delete it" in message
    assert "POWERCONTEXT_SECRET_KEY" in message
    assert (tmp_path / "secret_key").read_text(encoding="ascii") == content  # left alone


def test_processes_starting_at_once_agree_on_one_key(tmp_path, monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_SECRET_KEY", raising=False)
    keys = []
    barrier = threading.Barrier(8)

    def start():
        barrier.wait()
        keys.append(config.secret_key(tmp_path))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(keys)) == 1
    assert (tmp_path / "secret_key").read_text(encoding="ascii") == keys[0]


def test_a_key_is_still_written_where_hard_links_are_not_supported(tmp_path, monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_SECRET_KEY", raising=False)

    def no_links(*args):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(config.os, "link", no_links)
    key = config.secret_key(tmp_path)
    assert (tmp_path / "secret_key").read_text(encoding="ascii") == key
    assert _mode(tmp_path / "secret_key") == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret_key"]
