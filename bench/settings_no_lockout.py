"""The production settings without django-axes' lockout, for ``bench/login_flood.py
--without-lockout``: what the hashing gate alone holds against guesses that each come from
a new address or username (which the lockout would not stop before its limit)."""

from server.settings import *  # noqa: F403

AXES_ENABLED = False
