"""OceanBase (MySQL mode) backend for Django: ENGINE ``powercontext.db.backends.oceanbase``."""
