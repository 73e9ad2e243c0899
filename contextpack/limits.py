"""The Context Pack's limits, the domain's to set: prepare and session read them here,
and the API's serializers check requests against them.

The pack's own byte bounds (``MIN_MAX_BYTES``, ``MAX_MAX_BYTES``) stay in the pure
builder (``contextpack.builder``), which enforces them.
"""

# The longest query prepare accepts. The hook sends a prompt's first QUERY_MAX_CHARS
# characters as the query and captures the whole prompt (DESIGN.md §7); the prompt
# history (``contextpack.prompt_history``) reads captured prompts back as long.
QUERY_MAX_CHARS = 8192
# A session's pack is small (``contextpack.session``): 2,000 bytes unless asked otherwise.
SESSION_DEFAULT_MAX_BYTES = 2000
SESSION_MAX_MAX_BYTES = 8000
