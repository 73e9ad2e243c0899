"""``manage.py reviewer``: a reviewer who can log in to the desk and holds a token."""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from experience.models import ReviewerToken
from experience.tokens import reviewer_for_token
from tests.conftest import sqlite_only

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple 42"


class Terminal(io.StringIO):
    def isatty(self):
        return True


def run(*args, stdin=None):
    out = io.StringIO()
    call_command("reviewer", *args, stdout=out, stderr=io.StringIO(), stdin=stdin or io.StringIO())
    return out.getvalue()


def token_in(output):
    return re.search(r"(pcr_\S+)", output).group(1)


def log_in(client, username, password):
    """The admin's own login form, as a person would use it."""
    return client.post(
        "/admin/login/?next=/admin/",
        {"username": username, "password": password, "next": "/admin/"},
        follow=True,
    )


def test_password_stdin_makes_a_reviewer_who_logs_in_and_sees_only_the_desk(client):
    output = run("rita", "--password-stdin", stdin=io.StringIO(PASSWORD + "\n"))
    assert "Created reviewer rita." in output
    assert reviewer_for_token(token_in(output)).username == "rita"

    page = log_in(client, "rita", PASSWORD)
    assert page.status_code == 200
    assert page.request["PATH_INFO"] == "/admin/"
    body = page.content.decode()
    assert "/admin/experience/candidate/" in body  # the review queue
    assert "/admin/memory/" in body  # Memory browsing
    assert "/admin/auth/" not in body  # no user management
    assert client.get("/admin/experience/candidate/").status_code == 200
    assert client.get("/admin/auth/user/").status_code == 403
    assert client.get("/admin/auth/group/").status_code == 403


def test_the_password_is_asked_twice_on_a_terminal(client, monkeypatch):
    answers = iter([PASSWORD, PASSWORD])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    run("sam", stdin=Terminal())
    assert log_in(client, "sam", PASSWORD).request["PATH_INFO"] == "/admin/"


def test_without_a_terminal_it_says_what_to_use():
    with pytest.raises(CommandError, match="--password-stdin or --set-password-link"):
        run("sam")


def test_a_weak_password_is_refused_and_nothing_is_created(django_user_model):
    with pytest.raises(CommandError, match=r"too short|too common"):
        run("sam", "--password-stdin", stdin=io.StringIO("abc\n"))
    assert not django_user_model.objects.filter(username="sam").exists()


def test_set_password_link_works_once(client):
    output = run("rita", "--set-password-link", "--url", "http://desk.example:9000/")
    link = re.search(r"http://desk\.example:9000(/admin/reset/\S+)", output).group(1)
    assert log_in(client, "rita", "").request["PATH_INFO"] != "/admin/"

    form = client.get(link, follow=True)
    assert form.status_code == 200
    set_url = form.request["PATH_INFO"]
    done = client.post(set_url, {"new_password1": PASSWORD, "new_password2": PASSWORD}, follow=True)
    assert done.status_code == 200
    assert log_in(client, "rita", PASSWORD).request["PATH_INFO"] == "/admin/"
    client.logout()
    # Used once: the token no longer validates.
    again = client.get(link, follow=True)
    assert "new_password1" not in again.content.decode()


def test_an_existing_user_becomes_a_reviewer_and_a_superuser_stays_one(django_user_model):
    django_user_model.objects.create_superuser("root", password=PASSWORD)
    django_user_model.objects.create_user("sam")
    run("root", "--set-password-link")
    run("sam", "--set-password-link", "--no-token")
    root = django_user_model.objects.get(username="root")
    assert root.is_superuser
    assert root.check_password(PASSWORD)  # a link alone changes no password
    sam = django_user_model.objects.get(username="sam")
    assert sam.is_staff
    assert sam.groups.filter(name="Experience reviewers").exists()
    assert not ReviewerToken.objects.filter(user=sam).exists()


@pytest.mark.slow
@sqlite_only("runs manage.py on a fresh SQLite data directory")
def test_works_on_a_fresh_data_directory_before_the_first_serve(tmp_path):
    """Like createsuperuser and reviewer_token: migrate first, then make the reviewer."""
    env = {
        **os.environ,
        "POWERCONTEXT_HOME": str(tmp_path / "home"),
        "DJANGO_SETTINGS_MODULE": "server.settings",
    }
    env.pop("POWERCONTEXT_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "reviewer", "rita", "--password-stdin"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        input=PASSWORD + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "pending migration(s)" in done.stderr
    assert "Created reviewer rita." in done.stdout
    assert "pcr_" in done.stdout


@pytest.fixture
def serving_elsewhere(tmp_path, settings, monkeypatch):
    """A server recorded on this data directory at port 8123: a process whose command
    line says ``serve``, as ``manage.py serve``'s does."""
    monkeypatch.delenv("POWERCONTEXT_URL", raising=False)
    settings.POWERCONTEXT_HOME = tmp_path
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "serve"])
    (tmp_path / "servers").mkdir()
    (tmp_path / "servers" / f"{stand_in.pid}.json").write_text(
        f'{{"pid": {stand_in.pid}, "url": "http://127.0.0.1:8123/"}}'
    )
    yield stand_in
    stand_in.kill()
    stand_in.wait()


def test_links_go_to_the_port_the_running_server_listens_on(serving_elsewhere):
    output = run("rita", "--set-password-link")
    assert re.search(r"http://127\.0\.0\.1:8123/admin/reset/\S+", output), output
    assert ":8000" not in output


def test_a_stale_server_record_is_ignored(serving_elsewhere):
    serving_elsewhere.kill()
    serving_elsewhere.wait()
    output = run("rita", "--set-password-link")
    assert "http://127.0.0.1:8000/admin/reset/" in output
