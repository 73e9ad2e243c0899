from django.apps import AppConfig


class ExperienceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "experience"
    verbose_name = "Experience review"

    def ready(self) -> None:
        from experience import archive
        from experience.search_index import EXPERIENCE_INDEX
        from powercontext.capabilities import register_family
        from powercontext.maintenance import Family, register

        archive.register()
        register_family("experience")
        EXPERIENCE_INDEX.register()
        register(
            Family(
                "experience",
                rebuild="experience.rebuild.experience_rebuild",
                check="experience.rebuild.experience_check",
                index_status="experience.rebuild.experience_index_status",
                redact="experience.redaction.experience_redact",
            )
        )
