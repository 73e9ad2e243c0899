"""Scope resolution: explicit id, normalised origin remote, else a hash of the repo root."""

import hashlib
import os
import subprocess

import pytest

from .conftest import Reply, codex_payload, load_hook_module, prepared

PREPARE = "/v1/context/prepare"
hook_module = load_hook_module()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/o/r.git", "github.com/o/r"),
        ("https://github.com/o/r", "github.com/o/r"),
        ("https://github.com/o/r/", "github.com/o/r"),
        ("https://github.com/o/r.git/", "github.com/o/r"),
        ("https://user:s3cret@GitHub.COM:443/o/r.git", "github.com/o/r"),
        (
            "https://oauth2:tok@gitlab.example.com/Group/Sub/Repo.git",
            "gitlab.example.com/Group/Sub/Repo",
        ),
        ("http://git.example.com//o//r.git", "git.example.com/o/r"),
        ("git@github.com:o/r.git", "github.com/o/r"),
        ("git@github.com:o/r", "github.com/o/r"),
        ("github.com:o/r.git", "github.com/o/r"),
        ("ssh://git@github.com/o/r", "github.com/o/r"),
        ("ssh://git@github.com:22/o/r.git", "github.com/o/r"),
        ("ssh://git@GitHub.com:2222/o/r.git/", "github.com/o/r"),
        ("git+ssh://git@github.com/o/r.git", "github.com/o/r"),
        ("git://github.com/o/r.git", "github.com/o/r"),
        ("ssh://git@[2001:db8::1]:22/o/r.git", "[2001:db8::1]/o/r"),
        ("git@[2001:DB8::1]:o/r.git", "[2001:db8::1]/o/r"),
        ("  https://github.com/o/r.git\n", "github.com/o/r"),
    ],
)
def test_remote_urls_normalise_to_host_and_path(url, expected):
    assert hook_module.normalize_remote(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "",
        "/srv/git/r.git",
        "../r.git",
        "./r",
        "file:///srv/git/r.git",
        "C:/repos/r.git",
        "C:\\repos\\r.git",
        "https://github.com/",
        "https://github.com/.git",
    ],
)
def test_remotes_without_a_network_host_give_no_git_scope(url):
    assert hook_module.normalize_remote(url) is None


def test_git_config_values_are_parsed_like_git():
    value = hook_module._config_value
    assert value('"https://h/o/r.git" # comment') == "https://h/o/r.git"
    assert value("https://h/o/r.git ; comment") == "https://h/o/r.git"
    assert value('"a;b#c"') == "a;b#c"
    assert value("git@h:o/r.git   ") == "git@h:o/r.git"


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "deep").mkdir(parents=True)
    git("init", "-q", cwd=root)
    return root


def scope_of(hook, fake_server, cwd, **env):
    server = fake_server({PREPARE: Reply(200, prepared(None))})
    env.setdefault("POWERCONTEXT_CAPTURE", "0")
    run = hook("codex", server.url, payload=codex_payload("hello", str(cwd)), **env)
    [request] = server.requests_to(PREPARE)
    assert run.returncode == 0
    return request.json()["scope_id"]


def no_scope_env():
    return {"POWERCONTEXT_SCOPE_ID": ""}


@pytest.mark.parametrize(
    "url",
    ["https://bob:pw@GitHub.com/Acme/Widgets.git", "git@github.com:Acme/Widgets.git"],
)
def test_origin_remote_gives_a_git_scope_from_any_subdirectory(url, repo, hook, fake_server):
    git("remote", "add", "origin", url, cwd=repo)
    git("remote", "add", "upstream", "https://example.com/x/y.git", cwd=repo)
    for cwd in (repo, repo / "src" / "deep"):
        assert scope_of(hook, fake_server, cwd, **no_scope_env()) == "git:github.com/Acme/Widgets"


def test_repository_without_origin_gets_a_local_scope_of_its_root(repo, hook, fake_server):
    git("remote", "add", "upstream", "https://example.com/x/y.git", cwd=repo)
    expected = "local:" + hashlib.sha256(os.fsencode(os.path.realpath(repo))).hexdigest()
    assert scope_of(hook, fake_server, repo / "src" / "deep", **no_scope_env()) == expected


def test_directory_outside_any_repository_gets_a_local_scope_of_itself(tmp_path, hook, fake_server):
    plain = tmp_path / "plain"
    plain.mkdir()
    expected = "local:" + hashlib.sha256(os.fsencode(os.path.realpath(plain))).hexdigest()
    assert scope_of(hook, fake_server, plain, **no_scope_env()) == expected


def test_worktree_shares_the_origin_of_its_repository(repo, tmp_path, hook, fake_server):
    git("remote", "add", "origin", "ssh://git@github.com/acme/widgets.git", cwd=repo)
    git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "i",
        cwd=repo,
    )
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", str(worktree), cwd=repo)
    assert scope_of(hook, fake_server, worktree, **no_scope_env()) == "git:github.com/acme/widgets"


def test_explicit_scope_wins_over_the_repository(repo, hook, fake_server):
    git("remote", "add", "origin", "https://github.com/acme/widgets.git", cwd=repo)
    assert scope_of(hook, fake_server, repo, POWERCONTEXT_SCOPE_ID="team:widgets") == "team:widgets"


def test_explicit_scope_is_stripped_like_the_other_settings(repo, hook, fake_server):
    scope = scope_of(hook, fake_server, repo, POWERCONTEXT_SCOPE_ID=" \tteam:widgets\n")
    assert scope == "team:widgets"


def test_missing_cwd_falls_back_without_failing(tmp_path, hook, fake_server):
    scope = scope_of(hook, fake_server, tmp_path / "gone", **no_scope_env())
    assert scope.startswith(("local:", "git:"))
