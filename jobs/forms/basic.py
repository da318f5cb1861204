"""Basic information: job name, tags (key/value rows) and description.

Fields only parse types; every rule (name characters, tag key prefixes, lengths, ...) is jobs.spec's.
"""

from __future__ import annotations

from django import forms

from jobs.spec.rules import JOB_NAME_CHARSET

SECTION = "basic"
TITLE = "Basic information"
DEPENDENT: tuple[str, ...] = ()  # nothing here changes which fields show


class Form(forms.Form):
    name = forms.CharField(
        label="Job name", required=False,
        help_text=f"Easy to recognise. {JOB_NAME_CHARSET[0].upper()}{JOB_NAME_CHARSET[1:]}; at most 256 characters.",
    )
    description = forms.CharField(
        label="Task description", required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Purpose, background or other context of the job.",
    )

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)


class TagForm(forms.Form):
    key = forms.CharField(label="Tag key", required=False)
    value = forms.CharField(label="Tag value", required=False, help_text="Separate several values with commas.")

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)


ROWS = {"tags": TagForm}
ROW_LABELS = {"tags": "Tag"}
