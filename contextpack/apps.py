from django.apps import AppConfig


class ContextpackConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "contextpack"
