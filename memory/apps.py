from django.apps import AppConfig


class MemoryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory"

    def ready(self) -> None:
        from memory import archive
        from memory.search_index import MEMORY_INDEX
        from powercontext.capabilities import register_family
        from powercontext.maintenance import Family, register

        archive.register()
        register_family("memory")
        MEMORY_INDEX.register()
        register(
            Family(
                "memory",
                rebuild="memory.rebuild.memory_rebuild",
                check="memory.integrity.memory_check",
                index_status="memory.rebuild.memory_index_problem",
                chunked=True,
                redact="memory.redaction.memory_redact",
            )
        )
