"""PowerContext's database layer: the SQLite (``backends.sqlite``) and OceanBase
(``backends.oceanbase``) backends."""
