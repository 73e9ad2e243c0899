"""The Memory family's errors (the generic ones are ``powercontext.exceptions``)."""

from powercontext.exceptions import PowerContextError


class MemoryNotFound(PowerContextError):
    code, status, default_message = "memory_not_found", 404, "Memory entry version not found."


class MemoryEntryInactive(PowerContextError):
    code, status, default_message = "memory_entry_inactive", 409, "The memory entry is retired."
