"""Write the changed fields of many rows in a few statements: the status sync's write side.

A sync page changes up to 100 rows, most of them in the same few fields (a status, its history). One `save()`
per row costs a statement, its round trip and Django's query compilation: when 10k jobs changed at once that
was most of the cycle on PostgreSQL (14.7 s, of which 3.7 s inside ListJobs). `bulk_update`, one UPDATE with a
`CASE WHEN id = ... THEN ...` per field, was measured slower still.

The rows are grouped by the set of fields that changed. On SQLite each group is one `executemany` of a plain
`UPDATE ... SET f1 = %s, ... WHERE id = %s`, a tight loop over one prepared statement (10k rows: ~0.15 s). On
PostgreSQL psycopg 3 would pipeline that executemany (no round trip per row), but every row stays a statement
of its own for the server: 10k status changes took 1.9-2.2 s so, and 1.1-1.6 s as one
`UPDATE ... FROM (VALUES (...), ...)` per group and page (the sync benchmark's table, durable settings, 2 CPUs),
which is what PostgreSQL gets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connections, models, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.options import Options

# Rows per UPDATE ... FROM (VALUES ...) statement: keeps a statement's parameters well under PostgreSQL's 65535.
VALUES_ROWS = 500


def update_changed(rows: Iterable[tuple[models.Model, Sequence[str]]], *, using: str | None = None) -> int:
    """Write, for each (instance, field names) pair, those fields of that instance to its row.

    Values are prepared by each model field (`pre_save` then `get_db_prep_save`), so JSON and datetimes are
    adapted exactly as `save(update_fields=...)` would. All instances must be of one model and already saved.
    Like `save()`, it runs in the caller's transaction (or autocommits); unlike it, it sends no signals.
    Returns the number of rows written to.
    """
    groups: dict[frozenset[str], list[models.Model]] = {}
    model: type[models.Model] | None = None
    for instance, names in rows:
        if not names:
            continue
        if model is None:
            model = type(instance)
        elif type(instance) is not model:
            raise TypeError(f"update_changed writes one model at a time: {model.__name__} and "
                            f"{type(instance).__name__}")
        groups.setdefault(frozenset(names), []).append(instance)
    if model is None:
        return 0
    meta = model._meta
    connection = connections[using or router.db_for_write(model)]
    columns = {f.name: f for f in meta.concrete_fields if not f.primary_key}
    written = 0
    with connection.cursor() as cursor:
        for names, instances in groups.items():
            unknown = names - set(columns)
            if unknown:
                raise ValueError(f"{model.__name__} has no column to write for: {', '.join(sorted(unknown))}")
            # In model order, so a set of names always makes the same statement.
            fields = [f for f in columns.values() if f.name in names]
            values = [
                [*(f.get_db_prep_save(f.pre_save(obj, False), connection) for f in fields),
                 meta.pk.get_db_prep_value(obj.pk, connection)]
                for obj in instances
            ]
            if connection.vendor == "postgresql":
                for start in range(0, len(values), VALUES_ROWS):
                    chunk = values[start : start + VALUES_ROWS]
                    cursor.execute(_values_update(connection, meta, fields, len(chunk)),
                                   [value for row in chunk for value in row])
            else:
                qn = connection.ops.quote_name
                sets = ", ".join(f"{qn(f.column)} = %s" for f in fields)
                cursor.executemany(f"UPDATE {qn(meta.db_table)} SET {sets} WHERE {qn(meta.pk.column)} = %s", values)
            written += len(values)
    return written


def _values_update(connection: BaseDatabaseWrapper, meta: Options, fields: list[models.Field], count: int) -> str:
    """UPDATE table SET f1 = v.c0, ... FROM (VALUES (%s::type, ..., %s::pk_type), ...) v(c0, ..., pk) WHERE id = v.pk.

    Each value is cast to its column's type, since a VALUES list has no column to take it from; text columns
    are cast to plain text, so that an over-long value is refused by the column (an explicit cast to varchar(n)
    would silently cut it).
    """
    qn = connection.ops.quote_name

    def cast(field: models.Field) -> str:
        kind = field.cast_db_type(connection)
        return "text" if kind.startswith(("varchar", "char")) else kind

    names = [f"c{i}" for i in range(len(fields))]
    row = "(" + ", ".join([*(f"%s::{cast(f)}" for f in fields), f"%s::{cast(meta.pk)}"]) + ")"
    sets = ", ".join(f"{qn(f.column)} = v.{name}" for f, name in zip(fields, names, strict=True))
    return (f"UPDATE {qn(meta.db_table)} SET {sets} FROM (VALUES {', '.join([row] * count)}) "
            f"AS v({', '.join(names)}, pk) WHERE {qn(meta.db_table)}.{qn(meta.pk.column)} = v.pk")
