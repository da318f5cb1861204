"""Roles and permissions: the instance RAM role."""

from __future__ import annotations

from django import forms

from jobs import catalog as C
from jobs.forms.widgets import choices

SECTION = "ram_role"
TITLE = "RAM role"
DEPENDENT = ("mode",)

MODE_HELP = (
    f"Default role of PAI runs as {C.DEFAULT_RAM_ROLE_NAME}: MaxCompute and the workspace's default OSS bucket "
    "only. A custom role's STS credentials carry that role's permissions."
)


class Form(forms.Form):
    mode = forms.CharField(label="Instance RAM role", required=False,
                           widget=forms.RadioSelect(choices=choices(C.RAM_ROLE_MODES)), help_text=MODE_HELP)
    role_arn = forms.CharField(label="Role ARN", required=False,
                               widget=forms.TextInput(attrs={"placeholder": "acs:ram::1234567890:role/train"}))

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)


ROWS: dict[str, type[forms.Form]] = {}
ROW_LABELS: dict[str, str] = {}
