"""The job table's rows (jobs.listing.Row) as HTML, written in Python rather than in a template: a list page has
20-100 rows, and the template engine spent ~180 µs on each (3.6 ms of a 16 ms page of 20 rows, bench/RESULTS.md),
where this takes ~10. Used by templates/jobs/_row.html, the one place a row's markup is asked for.

Every value from a row goes through `_e` (HTML-escaped, quotes included, as Django's autoescape does), whether it
lands in an attribute or in text; only ints and the fixed markup are not escaped.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe

from jobs.listing import Row

register = template.Library()


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def row_html(row: Row, *, selectable: bool, oob: bool) -> str:
    """One <tr>; out of band (`oob`) it goes in a <template>, which keeps a <tr> parseable on its own. The ids of
    the checkbox and the name link let htmx give focus back to them when the row poll replaces the row."""
    pk, name = row["pk"], _e(row["name"])
    check = (f'<td class="check"><input type="checkbox" name="job" value="{pk}" id="sel-{pk}" '
             f'aria-label="Select {name}"{" checked" if row["checked"] else ""}></td>') if selectable else ""
    notes = ""
    if row["notes"]:
        label = _e(row["notes_label"])
        notes = f'<span class="note-count" title="{label}"><span aria-hidden="true">✎</span> {label}</span>'
    status = f'<span class="badge {_e(row["tone"])}">{_e(row["label"])}</span>'
    if row["idle"]:
        status += ' <span class="badge warning idle" title="Running but idle: see the job page">Idle</span>'
    if row["waits_for"]:
        status += f'<div class="small">after <a href="{_e(row["waits_for_url"])}">job {row["waits_for"]}</a></div>'
    if row["stop_failed"]:
        status += (f'<div class="error small" title="{_e(row["stop_message"])}">'
                   f'Stop failed: {_e(row["stop_code"])}</div>')
    swap = ' hx-swap-oob="true"' if oob else ""
    tr = (f'<tr id="job-{pk}" data-status="{_e(row["status"])}"{swap}>\n'
          f'  {check}<td class="name"><a href="{_e(row["url"])}" id="name-{pk}" title="{name}">{name}</a>{notes}</td>\n'
          f'  <td>{status}</td>\n'
          f'  <td>{_e(row["job_type"])}</td>\n'
          f'  <td>{_e(row["owner"])}</td>\n'
          f'  <td><time datetime="{_e(row["created_iso"])}">{_e(row["created"])}</time></td>\n'
          f'  <td>{_e(row["duration"])}</td>\n'
          f'  <td class="mono">{_e(row["dlc_job_id"])}</td>\n'
          f'</tr>')
    return f"<template>{tr}</template>\n" if oob else f"{tr}\n"


@register.simple_tag
def job_rows(rows: Iterable[Row], selectable: bool = False, oob: bool = False) -> SafeString:
    """The rows, `selectable` with the checkbox column (views.can_tick), `oob` for an out-of-band swap."""
    return mark_safe("".join(row_html(row, selectable=bool(selectable), oob=bool(oob)) for row in rows))  # noqa: S308
