"""What OceanBase (MySQL mode) really supports, as Django feature flags.

Django's MySQL features derive most flags from ``VERSION()``, which OceanBase reports as
MySQL 5.7.25; that would switch off things OceanBase has (CHECK constraints, functional
indexes, INTERSECT) and switch on one it lacks (``FOR UPDATE OF``). Every flag that
differs from what the parent would infer is stated here, each with what was checked
against seekdb 1.4.0 (OceanBase 4.3.5.3 kernel) to decide it. Flags not mentioned keep
Django's MySQL value, which was found to be right (window functions with RANGE frames,
LEAD/LAG defaults, XOR, stored and virtual generated columns, ON DUPLICATE KEY UPDATE,
table and column comments, descending index columns).
"""

from __future__ import annotations

from django.db.backends.mysql.features import DatabaseFeatures as MySQLDatabaseFeatures


class DatabaseFeatures(MySQLDatabaseFeatures):
    # The flag OceanBase-only SQL (FULLTEXT ... WITH PARSER SPACE, MATCH ... AGAINST)
    # branches on; ``vendor`` stays "mysql".
    is_oceanbase = True

    # Compared with OceanBase's own version (from @@version_comment), not VERSION().
    # 4.3.5 is the kernel tested (seekdb 1.4.0 embeds 4.3.5.3); the space/ngram
    # full-text parsers PowerContext needs are in the 4.3.x line.
    minimum_database_version = (4, 3, 5)

    # Transactions on the default storage engine; DDL commits implicitly (a row
    # inserted before CREATE TABLE in one transaction survived ROLLBACK, and the table
    # stayed), so no transactional DDL.
    supports_transactions = True
    can_rollback_ddl = False
    # SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE SAVEPOINT all work (a row inserted
    # after the savepoint was gone after rolling back to it, the one before it kept).
    uses_savepoints = True
    can_release_savepoints = True

    # CHECK constraints are enforced (a violating INSERT fails with 3819, which Django's
    # MySQL cursor already maps to IntegrityError) and listed in
    # information_schema.check_constraints / table_constraints. (MySQL < 8.0.16: off.)
    supports_column_check_constraints = True
    supports_table_check_constraints = True
    can_introspect_check_constraints = True

    # FOR UPDATE blocks a second locker until commit; NOWAIT fails at once (1205, not
    # MySQL's 3572); SKIP LOCKED skips the locked row. ``FOR UPDATE OF t`` is a syntax
    # error (1064), and ``FOR SHARE`` too (``LOCK IN SHARE MODE`` works).
    has_select_for_update = True
    has_select_for_update_nowait = True
    has_select_for_update_skip_locked = True
    has_select_for_update_of = False
    supports_select_for_update_with_limit = True

    # ``CREATE INDEX i ON t ((a + 1))`` and ``((lower(s)))`` work. (MySQL < 8.0.13: off.)
    # Note: a column under a functional index cannot be renamed (3837).
    supports_expression_indexes = True
    # ``DEFAULT (expr)`` works for numeric/char/datetime columns (PI(), UUID(),
    # CURRENT_TIMESTAMP(6)); TEXT/BLOB/JSON columns take no default at all (1067/1101),
    # which the schema editor handles by skipping those defaults.
    supports_expression_defaults = True
    # INTERSECT and EXCEPT work, as do nested parenthesised UNIONs. (MySQL < 8.0.31: off.)
    supports_select_intersection = True
    supports_select_difference = True
    # ALTER TABLE ... RENAME INDEX works.
    can_rename_index = True

    # JSON columns, JSON_EXTRACT / -> / ->> / JSON_CONTAINS / JSON_TYPE / JSON_OBJECT
    # work; there is no native UUID type (1064 on ``uuid``).
    supports_json_field = True
    can_introspect_json_field = True
    has_json_object_function = True
    has_native_uuid_field = False

    # No EXPLAIN ANALYZE and no FORMAT=TREE (both 1064); FORMAT=JSON and TRADITIONAL work.
    supports_explain_analyze = False
    supported_explain_formats = frozenset({"JSON", "TEXT", "TRADITIONAL"})

    # Django clones MySQL test databases with mysqldump, which is not part of seekdb.
    can_clone_databases = False

    # Only utf8mb4_general_ci and utf8mb4_bin exist for utf8mb4 (SHOW COLLATION).
    test_collations = {
        "ci": "utf8mb4_general_ci",
        "cs": "utf8mb4_bin",
        "non_default": "utf8mb4_general_ci",
    }
