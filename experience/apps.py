from django.apps import AppConfig


class ExperienceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "experience"
    verbose_name = "Experience review"

    def ready(self) -> None:
        from contextpack.application import register_experience_search
        from experience.recall import experience_pack_hits
        from powercontext.capabilities import register_family

        register_family("experience")
        register_experience_search(experience_pack_hits)
