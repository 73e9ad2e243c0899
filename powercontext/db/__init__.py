"""PowerContext's database layer: the OceanBase backend (``backends.oceanbase``)."""
