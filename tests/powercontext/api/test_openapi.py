"""The committed OpenAPI document is what the code generates, and it is valid."""

from pathlib import Path

from django.core.management import call_command

COMMITTED = Path(__file__).resolve().parents[3] / "openapi" / "powercontext.yaml"


def test_committed_openapi_has_no_drift(tmp_path):
    generated = tmp_path / "powercontext.yaml"
    # --validate checks it against the OpenAPI 3 meta-schema; --fail-on-warn keeps
    # every operation fully described.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(generated))
    assert generated.read_text() == COMMITTED.read_text(), (
        "openapi/powercontext.yaml is stale: regenerate it with "
        "`python manage.py spectacular --validate --fail-on-warn --file openapi/powercontext.yaml`"
    )


def test_swagger_ui_is_served(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()
