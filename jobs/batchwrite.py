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
    adapted exactly as `save(update_fields=...)` would; names may be field names or attnames (`owner_id`), as
    there. All instances must be of one model and already saved. A row named more than once ends as if the
    pairs were saved in order: each field from the last pair naming it (on PostgreSQL, a row joined twice in
    one UPDATE ... FROM takes an unpredictable one of them, in practice the first).
    Like `save()`, it runs in the caller's transaction (or autocommits); unlike it, it sends no signals.
    Returns the number of rows written to (a row deleted meanwhile is not).
    """
    model: type[models.Model] | None = None
    columns: dict[str, models.Field] = {}  # by name and by attname
    known: set[str] = set()
    # pk -> field name -> the instance whose value that field gets.
    sources: dict[object, dict[str, models.Model]] = {}
    for instance, names in rows:
        if not names:
            continue
        if model is None:
            model = type(instance)
            columns = {f.name: f for f in model._meta.concrete_fields if not f.primary_key}
            columns.update({f.attname: f for f in list(columns.values())})
            known = set(columns)
        elif type(instance) is not model:
            raise TypeError(f"update_changed writes one model at a time: {model.__name__} and "
                            f"{type(instance).__name__}")
        if instance.pk is None:
            raise ValueError(f"update_changed writes saved rows only: this {model.__name__} has no primary key")
        unknown = set(names) - known
        if unknown:
            raise ValueError(f"{model.__name__} has no column to write for: {', '.join(sorted(unknown))}")
        fields = sources.setdefault(instance.pk, {})
        for name in names:
            fields[columns[name].name] = instance
    if model is None:
        return 0
    groups: dict[frozenset[str], list[tuple[object, dict[str, models.Model]]]] = {}
    for pk, fields in sources.items():
        groups.setdefault(frozenset(fields), []).append((pk, fields))
    meta = model._meta
    connection = connections[using or router.db_for_write(model)]
    written = 0
    with connection.cursor() as cursor:
        for names, members in groups.items():
            # In model order, so a set of names always makes the same statement.
            fields = [f for f in meta.concrete_fields if not f.primary_key and f.name in names]
            values = [
                [*(f.get_db_prep_save(f.pre_save(sources_of[f.name], False), connection) for f in fields),
                 meta.pk.get_db_prep_value(pk, connection)]
                for pk, sources_of in members
            ]
            if connection.vendor == "postgresql":
                for start in range(0, len(values), VALUES_ROWS):
                    chunk = values[start : start + VALUES_ROWS]
                    cursor.execute(_values_update(connection, meta, fields, len(chunk)),
                                   [value for row in chunk for value in row])
                    written += max(cursor.rowcount, 0)
            else:
                qn = connection.ops.quote_name
                sets = ", ".join(f"{qn(f.column)} = %s" for f in fields)
                cursor.executemany(f"UPDATE {qn(meta.db_table)} SET {sets} WHERE {qn(meta.pk.column)} = %s", values)
                written += max(cursor.rowcount, 0)
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
