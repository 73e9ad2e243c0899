from django.apps import AppConfig


class ContextpackConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "contextpack"

    def ready(self):
        from django.contrib import admin

        # The admin index adds a link to the pack preview (``contextpack.preview``); the
        # template extends the admin's own index, so everything else stays as it is.
        admin.site.index_template = "admin/contextpack/index.html"
