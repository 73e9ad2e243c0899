"""The desk is PowerContext's, on every page a reviewer meets: never "Django administration"."""

import pytest


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/admin/login/", "/admin/reset/MQ/set-password/", "/admin/reset/done/"]
)
def test_the_desk_is_branded_powercontext_not_django(client, path):
    page = client.get(path, follow=True).content.decode()
    assert "Django" not in page
    assert "<title>" in page
    assert "PowerContext" in page.split("<title>")[1].split("</title>")[0]


@pytest.mark.django_db
def test_the_desk_index_is_branded_powercontext(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert "Django" not in page
    assert '<a href="/admin/">PowerContext</a>' in page
