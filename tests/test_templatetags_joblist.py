"""jobs/templatetags/joblist.py: the job table's rows written in Python, every value escaped wherever it lands."""

from __future__ import annotations

import re

from jobs.templatetags.joblist import job_rows

EVIL = "<x\"'&>"
ESCAPED = "&lt;x&quot;&#x27;&amp;&gt;"


def row(**changes):
    text = {key: f"{key}{EVIL}" for key in ("name", "url", "status", "label", "tone", "stop_code", "stop_message",
                                            "job_type", "owner", "created_iso", "created", "duration", "dlc_job_id",
                                            "waits_for_url", "notes_label")}
    return {**text, "pk": 7, "stop_failed": True, "checked": True, "waits_for": 3, "notes": 2, "idle": True,
            **changes}


def test_every_string_of_a_row_is_escaped_in_text_and_attributes():
    html = str(job_rows([row()], selectable=True))
    assert "<x" not in html and "\"'&" not in html
    for key in ("name", "url", "status", "label", "tone", "stop_code", "stop_message", "job_type", "owner",
                "created_iso", "created", "duration", "dlc_job_id", "waits_for_url", "notes_label"):
        assert f"{key}{ESCAPED}" in html, key
    # Attributes stay whole: every quote in the markup pairs up.
    for tag in re.findall(r"<[a-z][^>]*>", html):
        assert tag.count('"') % 2 == 0, tag


def test_the_checkbox_column_the_optional_parts_and_out_of_band_rows():
    plain = row(stop_failed=False, checked=False, waits_for=0, notes=0, idle=False)
    html = str(job_rows([plain], selectable=False))
    assert html.startswith('<tr id="job-7" data-status="status') and 'type="checkbox"' not in html
    assert "Stop failed" not in html and "after <a" not in html and "note-count" not in html and "Idle" not in html
    assert "hx-swap-oob" not in html and "<template>" not in html
    html = str(job_rows([row()], selectable=True, oob=True))
    assert html.startswith("<template><tr id=\"job-7\"") and 'hx-swap-oob="true"' in html
    assert '<input type="checkbox" name="job" value="7" id="sel-7"' in html and " checked>" in html
    assert ">job 3</a>" in html and "Stop failed: stop_code" in html and ">Idle</span>" in html
    assert str(job_rows([], selectable=True)) == ""
