from django.apps import AppConfig


class MemoryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory"

    def ready(self) -> None:
        from powercontext.capabilities import register_family
        from powercontext.maintenance import Family, register

        register_family("memory")
        register(
            Family(
                "memory",
                rebuild="memory.rebuild.memory_rebuild",
                check="memory.integrity.memory_check",
                index_status="memory.rebuild.memory_index_problem",
            )
        )
