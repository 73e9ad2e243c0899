"""SQLite backend that loads sqlite-vec: ENGINE ``powercontext.db.backends.sqlite``."""
