"""What ``manage.py serve`` tells a newcomer: the engine's name, a second server on the
same data, a database it cannot use."""

from types import SimpleNamespace

from server.management.commands import serve as serve_command

# OceanBase's backend keeps Django's MySQL vendor (Django's MySQL code runs on it).
OCEANBASE_LIKE = SimpleNamespace(
    vendor="mysql", display_name="OceanBase", settings_dict={"NAME": "powercontext"}
)


def test_the_ready_line_calls_oceanbase_by_its_name(monkeypatch):
    monkeypatch.setattr(serve_command, "connections", {"default": OCEANBASE_LIKE})
    assert serve_command._data() == "OceanBase database powercontext"
