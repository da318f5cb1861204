"""Fault tolerance and diagnosis: automatic fault tolerance (AIMaster) and the sanity check."""

from __future__ import annotations

from django import forms

SECTION = "fault_tolerance"
TITLE = "Fault tolerance and diagnosis"
DEPENDENT = ("enabled", "sanity_check")


class Form(forms.Form):
    enabled = forms.BooleanField(label="Automatic fault tolerance", required=False,
                                 help_text="AIMaster watches the job and acts on algorithm-level errors.")
    args = forms.CharField(label="Fault tolerance parameters", required=False,
                           widget=forms.TextInput(attrs={"class": "mono",
                                                         "placeholder": "--enable-log-hang-detection true"}))
    sanity_check = forms.BooleanField(
        label="Sanity check", required=False,
        help_text="Checks the nodes before training; PyTorch jobs on a Lingjun quota with GPUs only.",
    )
    sanity_args = forms.CharField(label="Sanity check parameters", required=False,
                                  widget=forms.TextInput(attrs={"class": "mono"}))

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)


ROWS: dict[str, type[forms.Form]] = {}
ROW_LABELS: dict[str, str] = {}
