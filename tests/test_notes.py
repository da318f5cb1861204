"""Notes on jobs (jobs.notes, jobs.note_views): the text's rules, who writes, edits and deletes, the job page's card
(HTMX and without JavaScript), the API, clone and export leaving them out, and the job list's note count without
a query more per page."""

from __future__ import annotations

import json
import re

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import access, listing, notes
from jobs.models import AuditEvent, Job, JobNote
from tests import portal_fixtures as pf
from tests.support.api import Api

HTMX = {"HTTP_HX_REQUEST": "true"}


def client(team, role):
    return pf.client_for(team.users[role])


def note_on(team, role="member", text="diverged: LR too high", job=None) -> JobNote:
    return JobNote.objects.create(job=job or team.job, author=team.users[role], text=text)


# --- the text's rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "error"), [
    ("", "cannot be empty"), ("  \r\n\t ", "cannot be empty"), ("x" * 4001, "at most 4,000 characters"),
    ("a\x00b", "NUL"), (None, "as a string"), (42, "as a string"),
])
def test_bad_text_is_refused_with_a_reason(raw, error):
    with pytest.raises(notes.NoteError, match=error):
        notes.clean_text(raw)


def test_text_is_stripped_its_line_breaks_kept_and_counted_once():
    assert notes.clean_text("  baseline\r\nfor the paper \n") == "baseline\nfor the paper"
    # 2,000 lines sent as \r\n: 3,999 characters once made \n, so within the limit.
    assert len(notes.clean_text("\r\n".join(["x"] * 2000))) == 3999
    assert len(notes.clean_text("y" * 4000)) == 4000


# --- permissions -----------------------------------------------------------------------------------------


def test_members_and_admins_write_viewers_and_read_only_tokens_read(team):
    job = access.get_job(team.users["member"], team.job.pk)
    for role in ("member", "admin"):
        assert notes.add(team.users[role], job, f"by {role}").author == team.users[role]
    with pytest.raises(PermissionDenied):
        notes.add(team.users["viewer"], job, "no")
    reader = team.users["member"]
    reader.token_scope = access.TokenScope(read_only=True)
    with pytest.raises(PermissionDenied):
        notes.add(reader, job, "no")
    assert list(notes.thread(job).values_list("text", flat=True)) == ["by member", "by admin"]


def test_authors_edit_their_own_admins_delete_any_and_that_is_audited(team):
    mine = note_on(team, "member")
    admin = team.users["admin"]
    assert access.can_change_note(team.users["member"], "edit", mine)
    assert not access.can_change_note(admin, "edit", mine), "an admin deletes, but never rewrites, others' notes"
    assert access.can_change_note(admin, "delete", mine)
    assert not access.can_change_note(team.users["viewer"], "delete", mine)
    with pytest.raises(PermissionDenied):
        notes.edit(admin, mine, "rewritten")
    edited = notes.edit(team.users["member"], mine, "  LR 3e-4 fixed it ")
    assert (edited.text, edited.edited_at is not None) == ("LR 3e-4 fixed it", True)

    own = note_on(team, "admin", "mine to remove")
    notes.delete(admin, own)
    assert not AuditEvent.objects.filter(details__event="note-deleted").exists(), "deleting one's own: no event"
    notes.delete(admin, mine)
    event = AuditEvent.objects.get(details__event="note-deleted")
    assert (event.actor, event.job_id, event.details["author"]) == (admin, team.job.pk, "member")
    assert "LR 3e-4" not in str(event.details), "the audit log says who and when, not what the note said"
    assert not JobNote.objects.exists()


def test_a_member_demoted_to_viewer_can_no_longer_edit_their_note(team):
    mine = note_on(team, "member")
    team.memberships["member"].role = "viewer"
    team.memberships["member"].save()
    assert not access.can_change_note(team.users["member"], "edit", mine)


# --- the job page's card ---------------------------------------------------------------------------------


def test_the_job_page_shows_the_thread_escaped_with_links_and_line_breaks(team):
    note_on(team, text='see https://wandb.example/run/7 <script>alert(1)</script>\nsecond line')
    html = client(team, "viewer").get(f"/jobs/{team.job.pk}").content.decode()
    card = re.search(r'<section class="card" id="notes-section">.*?</section>', html, re.S).group(0)
    assert '<a href="https://wandb.example/run/7" rel="nofollow">https://wandb.example/run/7</a>' in card
    assert "<script>alert" not in card and "&lt;script&gt;alert(1)&lt;/script&gt;\nsecond line" in card
    assert "<strong class=\"note-author\">member</strong>" in card
    assert 'id="note-add"' not in card and 'id="notes-read-only"' in card, "a viewer reads, writes nothing"
    assert "note-edit" not in card and "note-delete" not in card


def test_a_viewer_cannot_post_a_note(team):
    response = client(team, "viewer").post(f"/jobs/{team.job.pk}/notes", {"text": "hi"}, **HTMX)
    assert response.status_code == 403 and not JobNote.objects.exists()
    assert client(team, "other").post(f"/jobs/{team.job.pk}/notes", {"text": "hi"}).status_code == 404


def test_adding_by_htmx_answers_the_card_and_without_js_redirects_to_the_job(team):
    member = client(team, "member")
    partial = member.post(f"/jobs/{team.job.pk}/notes", {"text": "baseline for the paper"}, **HTMX)
    body = partial.content.decode()
    assert partial.status_code == 200 and body.lstrip().startswith('<div id="notes">')
    assert "<html" not in body and "baseline for the paper" in body and "note-edit" in body
    assert re.search(r'<textarea name="text" id="note-text"[^>]*></textarea>', body), "the add form is empty again"
    plain = member.post(f"/jobs/{team.job.pk}/notes", {"text": "second"})
    note = JobNote.objects.get(text="second")
    assert plain.status_code == 302 and plain["Location"] == f"/jobs/{team.job.pk}#note-{note.pk}"


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx", "plain"])
def test_a_refused_note_keeps_what_was_typed_and_says_why_at_the_field(team, headers):
    long = "too long " * 500
    response = client(team, "member").post(f"/jobs/{team.job.pk}/notes", {"text": long}, **headers)
    html = response.content.decode()
    assert response.status_code == 200 and not JobNote.objects.exists()
    assert re.search(r'id="note-error" role="alert">A note has at most 4,000 characters; this one has 4,499', html)
    assert f">{long}</textarea>" in html, "nothing typed is lost"
    assert ("<html" in html) == (not headers), "without JavaScript: the card on a page of its own"
    empty = client(team, "member").post(f"/jobs/{team.job.pk}/notes", {"text": "   "}, **headers)
    assert empty.status_code == 200 and "cannot be empty" in empty.content.decode()


def test_a_nul_in_the_text_is_said_in_one_wording_by_the_form_the_api_and_clean_text(team):
    # QA: the form said Django's "Null characters are not allowed.", the API its general NUL message at "text".
    with pytest.raises(notes.NoteError) as refused:
        notes.clean_text("a\x00b")
    assert refused.value.message == notes.NUL_MESSAGE
    for headers in (HTMX, {}):
        html = client(team, "member").post(f"/jobs/{team.job.pk}/notes", {"text": "a\x00b"}, **headers).content.decode()
        assert f'id="note-error" role="alert">{notes.NUL_MESSAGE}' in html and "Null characters" not in html
    answer = Api(team.users["member"]).post(f"/api/v1/jobs/{team.job.pk}/notes", {"text": "a\x00b"})
    assert answer.status_code == 400 and answer.json()["errors"] == {"text": [notes.NUL_MESSAGE]}
    assert not JobNote.objects.exists()
    mine = note_on(team, text="kept")
    html = client(team, "member").post(f"/jobs/{team.job.pk}/notes/{mine.pk}", {"text": "a\x00b"}).content.decode()
    assert f'id="note-error-{mine.pk}" role="alert">{notes.NUL_MESSAGE}' in html
    assert JobNote.objects.get().text == "kept"


def test_edit_and_delete_from_the_card(team):
    note = note_on(team)
    member = client(team, "member")
    form = member.get(f"/jobs/{team.job.pk}/notes?edit={note.pk}", **HTMX).content.decode()
    assert f'action="/jobs/{team.job.pk}/notes/{note.pk}"' in form and ">diverged: LR too high</textarea>" in form
    bad = member.post(f"/jobs/{team.job.pk}/notes/{note.pk}", {"text": ""}, **HTMX).content.decode()
    assert f'id="note-error-{note.pk}" role="alert">Write something' in bad
    saved = member.post(f"/jobs/{team.job.pk}/notes/{note.pk}", {"text": "fixed"}, **HTMX).content.decode()
    assert "fixed" in saved and "(edited)" in saved
    assert client(team, "admin").post(f"/jobs/{team.job.pk}/notes/{note.pk}", {"text": "x"}).status_code == 403
    other_job = pf.make_job(team.alpha, team.users["admin"], "other")
    assert member.post(f"/jobs/{other_job.pk}/notes/{note.pk}/delete").status_code == 404, "another job's note"
    gone = client(team, "admin").post(f"/jobs/{team.job.pk}/notes/{note.pk}/delete")
    assert gone.status_code == 302 and not JobNote.objects.exists()


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx", "plain"])
def test_editing_a_note_deleted_meanwhile_says_so_and_keeps_the_text(team, headers):
    # QA: the htmx POST got a 404 that htmx never swaps: the form stayed open, the text unsaved, nothing said.
    note = note_on(team)
    note_id = note.pk
    note.delete()  # by another tab
    response = client(team, "member").post(f"/jobs/{team.job.pk}/notes/{note_id}", {"text": "my careful words"},
                                           **headers)
    html = response.content.decode()
    assert response.status_code == (200 if headers else 404), "htmx swaps only a 2xx answer"
    assert ("<html" in html) == (not headers)
    assert 'id="note-notice" role="alert">This note was deleted meanwhile; your text is kept below.' in html
    assert re.search(r'<textarea name="text" id="note-text"[^>]*>my careful words</textarea>', html), "in add form"
    assert not JobNote.objects.exists(), "nothing saved by the refused edit"
    again = client(team, "member").post(f"/jobs/{team.job.pk}/notes/{note_id}/delete", **headers)
    assert again.status_code == (200 if headers else 404), "deleting it again: by htmx, the card as it is now"


def test_editing_without_the_right_any_more_says_so_and_keeps_the_text(team):
    mine = note_on(team, "member")
    team.memberships["member"].role = "viewer"
    team.memberships["member"].save()
    response = client(team, "member").post(f"/jobs/{team.job.pk}/notes/{mine.pk}", {"text": "new words"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "You may not edit this note (any more)" in html
    assert 'id="note-add"' not in html and re.search(r'<textarea id="note-kept"[^>]*readonly>new words</textarea>',
                                                     html), "a viewer cannot add it back, but can copy it"
    mine.refresh_from_db()
    assert mine.text != "new words"
    other = note_on(team, "admin", text="the admin's")
    answer = client(team, "admin").post(f"/jobs/{team.job.pk}/notes/{other.pk}", {"text": "x"}, **HTMX)
    assert answer.status_code == 200, "the admin's own note: saved"
    refused = client(team, "admin").post(f"/jobs/{team.job.pk}/notes/{mine.pk}", {"text": "admin typed"}, **HTMX)
    assert "You may not edit this note (any more)" in refused.content.decode() and ">admin typed</textarea>" in \
        refused.content.decode()


def test_the_card_costs_the_same_queries_for_one_note_or_many(team):
    member = client(team, "member")
    note_on(team)
    with CaptureQueriesContext(connection) as one:
        member.get(f"/jobs/{team.job.pk}/notes", **HTMX)
    for i in range(10):
        note_on(team, "admin" if i % 2 else "member", f"n{i}")
    with CaptureQueriesContext(connection) as many:
        html = member.get(f"/jobs/{team.job.pk}/notes", **HTMX).content.decode()
    assert len(many.captured_queries) == len(one.captured_queries)
    assert html.count('class="note-item"') == 11 and html.count("note-delete") == 6, "the member's own six"


# --- the API ---------------------------------------------------------------------------------------------


def test_the_api_lists_and_adds_notes_with_the_same_rules(team):
    note_on(team, text="first")
    url = f"/api/v1/jobs/{team.job.pk}/notes"
    listed = Api(team.users["viewer"]).get(url)
    assert listed.status_code == 200
    assert [(n["author"], n["text"]) for n in listed.json()["notes"]] == [("member", "first")]
    created = Api(team.users["member"]).post(url, {"text": "  second\nline "})
    assert created.status_code == 201 and created.json()["text"] == "second\nline"
    refused = Api(team.users["viewer"]).post(url, {"text": "no"})
    assert refused.status_code == 403 and "error" in refused.json()
    read_only = Api(team.users["member"], read_only=True)
    assert read_only.get(url).status_code == 200
    refused = read_only.post(url, {"text": "no"})
    assert refused.status_code == 403 and "read-only: it may not write notes" in refused.json()["error"]
    assert Api(team.users["other"]).get(url).status_code == 404
    for payload, message in [({"text": ""}, "cannot be empty"), ({}, "text is required"),
                             ({"text": "x" * 4001}, "at most 4,000"), ("nope", "not valid JSON")]:
        bad = Api(team.users["member"]).post(url, payload)
        assert bad.status_code == 400 and message in str(bad.json()["errors"]), payload
    assert JobNote.objects.count() == 2


def test_the_api_refuses_an_unknown_key_and_gives_the_new_notes_location(team):
    """QA: {"text": "a", "pinned": true} answered 201, pinned silently dropped; the 201 had no Location."""
    url = f"/api/v1/jobs/{team.job.pk}/notes"
    refused = Api(team.users["member"]).post(url, {"text": "a", "pinned": True})
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"pinned": ["Unknown field; the fields are: text."]}
    assert not JobNote.objects.exists()
    created = Api(team.users["member"]).post(url, {"text": "a"})
    assert created.status_code == 201 and created["Location"] == f"http://testserver{url}"


@pytest.mark.parametrize("payload", [["text"], [{"text": "a"}], "a note", 5, None])
def test_the_api_says_a_body_that_is_no_object_is_wrong_as_a_whole(team, payload):
    """QA: a JSON array answered 400 at `text`, as if the text were missing, not the body the wrong shape."""
    answer = Api(team.users["member"]).post(f"/api/v1/jobs/{team.job.pk}/notes", json.dumps(payload))
    assert answer.status_code == 400
    assert answer.json()["errors"] == {"": ['The request body must be a JSON object: {"text": "..."}.']}
    assert not JobNote.objects.exists()


def test_the_api_refuses_an_unknown_query_parameter(team):
    """QA: GET /api/v1/jobs/1/notes?author=bob listed every note, as if filtered."""
    url = f"/api/v1/jobs/{team.job.pk}/notes"
    listed = Api(team.users["viewer"]).get(url, author="bob")
    added = Api(team.users["member"]).post(f"{url}?pinned=1", {"text": "a"})
    assert listed.status_code == 400 and list(listed.json()["errors"]) == ["author"]
    assert added.status_code == 400 and list(added.json()["errors"]) == ["pinned"]
    assert not JobNote.objects.exists()


def test_the_openapi_document_describes_the_notes_endpoint():
    from jobs.api_jobs import openapi_document

    doc = openapi_document("http://testserver")
    path = doc["paths"]["/api/v1/jobs/{id}/notes"]
    assert set(path) == {"get", "post"} and "403" in path["post"]["responses"]
    assert doc["components"]["schemas"]["JobNote"]["properties"]["text"] == {"type": "string"}


# --- clone and export ------------------------------------------------------------------------------------


def test_a_clone_and_an_export_leave_the_notes_behind(team):
    from jobs import clone

    note_on(team, text="only-on-the-source")
    assert clone.policy("job.notes") == clone.RESET
    made = Api(team.users["member"]).post(f"/api/v1/jobs/{team.job.pk}/clone", {})
    assert made.status_code == 201
    copy = Job.objects.get(pk=made.json()["id"])
    assert copy.cloned_from_id == team.job.pk and not copy.notes.exists()
    for fmt in ("json", "python"):
        exported = client(team, "member").get(f"/jobs/{team.job.pk}/export/{fmt}")
        assert exported.status_code == 200 and b"only-on-the-source" not in exported.content


# --- the job list ----------------------------------------------------------------------------------------


def test_the_list_shows_a_note_count_and_pages_cost_the_same_queries(team):
    for i in range(25):
        pf.make_job(team.alpha, team.users["member"], f"bulk-{i:02d}", status="Succeeded")
    member = client(team, "member")
    with CaptureQueriesContext(connection) as bare:
        member.get("/?size=10")
    noted = Job.objects.filter(display_name__startswith="bulk-").order_by("-created_at", "-id")[:3]
    for n, job in enumerate(noted, start=1):
        for i in range(n):
            note_on(team, text=f"{i}", job=job)
    with CaptureQueriesContext(connection) as first:
        html = member.get("/?size=10").content.decode()
    assert len(first.captured_queries) == len(bare.captured_queries), "the count is in the rows query"
    rows = dict(re.findall(r'<tr id="job-(\d+)"(.*?)</tr>', html, re.S))
    assert len(rows) == 10
    shown = {int(pk): re.findall(r'class="note-count" title="([^"]+)"', row) for pk, row in rows.items()}
    assert {pk: found[0] for pk, found in shown.items() if found} == {
        noted[0].pk: "1 note", noted[1].pk: "2 notes", noted[2].pk: "3 notes"}
    deeper = re.search(r'href="([^"]*after=[^"]*)" hx-get', html).group(1).replace("&amp;", "&")
    with CaptureQueriesContext(connection) as deep:
        member.get(deeper)
    assert len(deep.captured_queries) == len(first.captured_queries)
    rows_sql = [q["sql"] for q in first.captured_queries if "jobs_jobnote" in q["sql"]]
    assert len(rows_sql) == 1 and "LIMIT 11" in rows_sql[0], "one rows query, with the count inside it"


def test_rows_read_without_the_count_show_none():
    job = Job(pk=1, display_name="x", status="Running")
    assert listing.rows([job])[0]["notes"] == 0


def test_the_polls_rows_keep_their_note_count(team):
    note_on(team)
    html = client(team, "member").get(f"/jobs/rows?watch={team.job.pk}:Queuing", **HTMX).content.decode()
    assert 'title="1 note"' in html


# --- the list's small fixes ------------------------------------------------------------------------------


def test_an_unknown_status_or_job_type_names_the_allowed_values_at_the_filter(team):
    f = listing.Filters.from_query({"status": "Exploded", "framework": "CaffeJob"})
    assert f.errors["status"][0].startswith("Unknown status 'Exploded'. Choose one of: active, finished, ")
    assert "Running" in f.errors["status"][0]
    assert f.errors["framework"][0].startswith("Unknown job type 'CaffeJob'. Choose one of: ")
    assert "PyTorchJob" in f.errors["framework"][0]
    response = client(team, "member").get("/?status=Exploded&framework=%3Cb%3E")
    html = response.content.decode()
    assert response.status_code == 200 and "Select a valid choice" not in html
    assert "Unknown status &#x27;Exploded&#x27;" in html and "Unknown job type &#x27;&lt;b&gt;&#x27;" in html
    assert re.findall(r'<tr id="job-(\d+)"', html), "the rest of the list is shown"
    api = Api(team.users["member"]).get("/api/v1/jobs", status="Exploded")
    assert api.status_code == 400 and api.json()["errors"]["status"][0].startswith("Unknown status 'Exploded'")


def test_the_dlc_job_id_cell_may_wrap(team):
    html = client(team, "member").get("/").content.decode()
    assert '<td class="mono">dlc-train-a</td>' in html
    from pathlib import Path

    css = Path(__file__).resolve().parent.parent.joinpath("static/css/console.css").read_text()
    assert re.search(r"#job-rows td\.mono \{[^}]*overflow-wrap: anywhere", css)


# --- in Chromium -----------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.browser
def test_adding_a_note_on_the_job_page_in_chromium(stack, workspace, member, page):
    from playwright.sync_api import expect

    from tests.conftest import PASSWORD
    from tests.support.browser import expect_focus, sign_in

    # The longest DLC job ID the column holds (64), to see it wrap in the list.
    job = Job.objects.create(workspace=workspace, owner=member, display_name="noted", job_type="PyTorchJob",
                             status="Succeeded", dlc_job_id="dlc-" + "0123456789abcdef" * 3 + "0123456789ab")
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/jobs/{job.pk}")
    expect(page.locator("#no-notes")).to_be_visible()
    page.locator("#note-text").fill("   ")
    page.locator("#note-submit").click()
    expect(page.locator("#note-error")).to_contain_text("cannot be empty")
    page.locator("#note-text").fill("diverged: LR too high\nsee https://wandb.example/run/7")
    page.locator("#note-submit").click()
    item = page.locator("#notes .note-item")
    expect(item).to_have_count(1)
    expect(item.locator(".note-text a")).to_have_attribute("href", "https://wandb.example/run/7")
    assert item.locator(".note-text").inner_text() == "diverged: LR too high\nsee https://wandb.example/run/7"
    expect(page.locator("#note-text")).to_have_value("")
    assert page.url == f"{stack.url}/jobs/{job.pk}", "answered in place by htmx"
    # Another tab deletes the note while its edit form is open: saving says so, the text typed kept (QA).
    item.locator(".note-edit").click()
    page.locator("#notes form.note-form textarea[id^=note-text-]").fill("my careful words")
    JobNote.objects.filter(job=job).delete()
    page.locator("#notes form.note-form button[type=submit]").first.click()
    expect(page.locator("#note-notice")).to_contain_text("This note was deleted meanwhile; your text is kept below.")
    expect(page.locator("#note-text")).to_have_value("my careful words")
    JobNote.objects.create(job=job, author=member, text="again")
    page.goto(f"{stack.url}/")
    expect(page.locator(f"#job-{job.pk} .note-count")).to_have_attribute("title", "1 note")
    # Deleting by keyboard takes the Delete button away: the focus goes to the add box, not to the page's start (QA).
    page.goto(f"{stack.url}/jobs/{job.pk}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#notes .note-delete").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#no-notes")).to_be_visible()
    expect_focus(page, "note-text")
