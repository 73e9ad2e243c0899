from django.apps import AppConfig


class PowerContextConfig(AppConfig):
    name = "powercontext"
    verbose_name = "PowerContext kernel"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the bearer scheme with drf-spectacular.
        from powercontext.api import schema  # noqa: F401
        from powercontext.archive import kernel

        # The kernel's archive streams come first: the families' rows refer to them.
        kernel.register()
