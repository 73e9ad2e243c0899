from django.apps import AppConfig


class ExperienceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "experience"
    verbose_name = "Experience review"

    def ready(self) -> None:
        from powercontext.capabilities import register_family

        register_family("experience")
