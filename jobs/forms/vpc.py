"""VPC: VPC, vSwitch, security group, extended CIDR blocks and the internet access gateway."""

from __future__ import annotations

from django import forms

from jobs import catalog as C
from jobs.forms.widgets import choices

SECTION = "vpc"
TITLE = "VPC"
DEPENDENT: tuple[str, ...] = ()


class Form(forms.Form):
    vpc_id = forms.CharField(label="VPC", required=False, help_text="Empty: the job uses the public network.")
    switch_id = forms.CharField(label="vSwitch", required=False,
                                help_text="Optional: empty lets the system pick one by inventory.")
    security_group_id = forms.CharField(label="Security group", required=False)
    extended_cidrs = forms.CharField(label="Extended CIDR blocks", required=False,
                                     help_text="All CIDR blocks of the VPC, separated by commas.")
    gateway = forms.CharField(label="Internet access gateway", required=False,
                              widget=forms.RadioSelect(choices=choices(C.GATEWAYS)),
                              help_text="Private: a NAT gateway with an EIP and SNAT entries in the VPC.")

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)


ROWS: dict[str, type[forms.Form]] = {}
ROW_LABELS: dict[str, str] = {}
