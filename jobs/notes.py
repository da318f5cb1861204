"""Notes on jobs: a thread of plain-text comments per job ("diverged: LR too high", "baseline for the paper").

Console-side only: nothing here calls DLC, and a clone (jobs.clone's POLICY "job.notes") or a job's config export
never carries them. Who may do what is jobs.access's ("note" for writing, can_change_note for edit and delete);
this module holds the text's rules, the writes (audited when an admin deletes someone else's note) and the
queries, the job list's note count per row among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.db.models import IntegerField, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from jobs import access, audit
from jobs.models import AuditEvent, Job, JobNote

MAX_CHARS = 4000
# The one wording of a NUL in a note's text, wherever it is sent: the form, the API (note_views), clean_text.
NUL_MESSAGE = "The text contains a NUL character, which a note cannot hold."


class NoteError(ValueError):
    """Text a note cannot have; `message` is said at the text field."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def clean_text(raw: Any) -> str:
    """The note's text as stored: line endings made \\n (a browser sends \\r\\n, which would count twice against
    the limit), outer blank space stripped, 1 to MAX_CHARS characters; NoteError otherwise."""
    if not isinstance(raw, str):
        raise NoteError("Send the note's text as a string.")
    text = raw.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise NoteError("Write something: a note cannot be empty.")
    if len(text) > MAX_CHARS:
        raise NoteError(f"A note has at most {MAX_CHARS:,} characters; this one has {len(text):,}. Shorten it or "
                        "split it into two notes.")
    if "\x00" in text:  # PostgreSQL refuses NUL in text
        raise NoteError(NUL_MESSAGE)
    return text


class NoteForm(forms.Form):
    """The add and edit forms of the job page: the rules are clean_text's, said at the field."""

    # No max_length: a longer text gets clean_text's message (with its length), and is given back whole to fix.
    text = forms.CharField(required=False, strip=False, label="Note", widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Django's own NUL check ("Null characters are not allowed.") would speak before clean_text: one wording.
        self.fields["text"].validators = []

    def clean_text(self) -> str:
        try:
            return clean_text(self.cleaned_data["text"])
        except NoteError as err:
            raise forms.ValidationError(err.message) from err


# --- writes ------------------------------------------------------------------------------------------------


def add(user, job: Job, text: Any) -> JobNote:
    """A new note by `user` (PermissionDenied unless they may write notes in the job's workspace)."""
    access.require(user, "note", workspace=job.workspace, job=job)
    return JobNote.objects.create(job=job, author=user, text=clean_text(text))


def edit(user, note: JobNote, text: Any) -> JobNote:
    access.require_note(user, "edit", note)
    note.text = clean_text(text)
    note.edited_at = timezone.now()
    note.save(update_fields=["text", "edited_at"])
    return note


def delete(user, note: JobNote) -> None:
    """Delete a note; an admin deleting someone else's leaves an audit event (who wrote it and when, not the text,
    which may quote anything)."""
    access.require_note(user, "delete", note)
    if note.author_id != user.pk:
        audit.record(user, AuditEvent.CHANGED, workspace=note.job.workspace, job=note.job, event="note-deleted",
                     note=note.pk, author=author_name(note), written_at=note.created_at.isoformat(),
                     characters=len(note.text))
    note.delete()


# --- reads -------------------------------------------------------------------------------------------------


def thread(job: Job) -> QuerySet[JobNote]:
    """A job's notes, oldest first (the job_note_order index), with their authors."""
    return job.notes.select_related("author").order_by("created_at", "id")


def find(job: Job, note_id: int) -> JobNote:
    """One of the job's notes (404 for another job's, so ids don't leak), knowing its job without a query."""
    from django.shortcuts import get_object_or_404

    note = get_object_or_404(JobNote.objects.select_related("author"), job=job, pk=note_id)
    note.job = job
    return note


def find_or_none(job: Job, note_id: int) -> JobNote | None:
    """find, None for a note that is not (or no longer) the job's."""
    note = JobNote.objects.select_related("author").filter(job=job, pk=note_id).first()
    if note is not None:
        note.job = job
    return note


DELETED_MEANWHILE = "This note was deleted meanwhile; your text is kept below."
NO_LONGER_YOURS = ("You may not edit this note (any more): only its author may, while a member or admin of this "
                   "workspace; your text is kept below.")


def edit_refusal(user, note: JobNote | None) -> str | None:
    """Why an edit posted from an open form cannot be saved any more (another tab deleted the note, or the user
    lost the right since opening it), None when it can: the card says it and keeps the text typed."""
    if note is None:
        return DELETED_MEANWHILE
    return None if access.can_change_note(user, "edit", note) else NO_LONGER_YOURS


def author_name(note: JobNote) -> str:
    return note.author.get_username() if note.author_id else "(deleted user)"


def count_per_job() -> RawSQL:
    """The number of notes of each row of a Job query, as one correlated subquery on the job_note_order index:
    the job list annotates its rows query with it (jobs.listing.for_rows) rather than asking once more per page.

    Raw SQL, as jobs.listing's name search: the ORM's Subquery(...) spelling of the same SQL costs 0.45 ms more
    per page to compile (measured at 100k jobs: +0.6 ms against +0.15 ms for this, on a page of ~7 ms). The outer
    table is named as Django names it in a query that starts from Job (its table name, not an alias)."""
    note, job = JobNote._meta.db_table, Job._meta.db_table
    return RawSQL(f'SELECT COUNT(*) FROM "{note}" n WHERE n."job_id" = "{job}"."id"', [],
                  output_field=IntegerField())


def count_label(n: int) -> str:
    return f"{n} note{'' if n == 1 else 's'}"


@dataclass
class Item:
    """A note as the job page shows it, with what the viewer may do to it."""

    note: JobNote
    author: str
    can_edit: bool
    can_delete: bool
    editing: bool = False
    form: NoteForm | None = None  # the edit form while editing: the typed text and its error, after a refusal


def card(user, job: Job, *, form: NoteForm | None = None, editing: int | None = None,
         edit_form: NoteForm | None = None, notice: str = "", kept: str = "") -> dict[str, Any]:
    """Everything the Notes card shows (templates/jobs/notes_card.html): the thread, the add form (`form`: bound
    after a refusal, so nothing typed is lost), and the note being edited (`editing`, its `edit_form`).
    `notice` and `kept`: an edit that could not be saved (edit_refusal) and its text, put in the add form (or,
    for a user who may not write notes any more, shown to copy)."""
    access.remember_role(user, job.workspace)  # one membership query for every permission asked below
    items = []
    for note in thread(job):
        may_edit = access.can_change_note(user, "edit", note)
        item = Item(note, author_name(note), may_edit, access.can_change_note(user, "delete", note))
        if may_edit and note.pk == editing:
            item.editing = True
            item.form = edit_form or NoteForm(initial={"text": note.text})
        items.append(item)
    can_write = access.can(user, "note", workspace=job.workspace)
    if form is None and can_write:
        form = NoteForm(initial={"text": kept}) if kept else NoteForm()
    return {"job": job, "items": items, "can_write": can_write, "form": form, "max_chars": f"{MAX_CHARS:,}",
            "notice": notice, "kept": "" if can_write else kept}


def note_json(note: JobNote) -> dict[str, Any]:
    return {"id": note.pk, "job": note.job_id, "author": author_name(note) if note.author_id else None,
            "text": note.text, "created_at": note.created_at.isoformat(),
            "edited_at": note.edited_at.isoformat() if note.edited_at else None}
