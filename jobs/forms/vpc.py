"""VPC: VPC, vSwitch, security group, extended CIDR blocks and the internet access gateway."""

from __future__ import annotations

from django import forms

from jobs import catalog as C
from jobs.forms.widgets import choices

SECTION = "vpc"
TITLE = "VPC"
DEPENDENT: tuple[str, ...] = ()


class Form(forms.Form):
    vpc_id = forms.CharField(label="VPC", required=False,
                             help_text="Empty: the job uses the public network. Lingjun preemptible resources "
                                       "require one.")
    switch_id = forms.CharField(label="vSwitch", required=False,
                                help_text="Empty lets the system pick one by inventory. Lingjun preemptible "
                                          "resources require one.")
    security_group_id = forms.CharField(label="Security group", required=False, help_text="Required with a VPC.")
    extended_cidrs = forms.CharField(label="Extended CIDR blocks", required=False,
                                     help_text="All CIDR blocks of the VPC, separated by commas.")
    gateway = forms.CharField(label="Internet access gateway", required=False,
                              widget=forms.RadioSelect(choices=choices(C.GATEWAYS)),
                              help_text="Private: a NAT gateway with an EIP and SNAT entries in the VPC.")

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        ui = ui or {}
        if (ui.get("resource_type"), ui.get("source")) in C.NEEDS_USER_VPC:
            # What the rules refuse empty says so where it is typed (jobs.spec: Lingjun preemptible resources).
            self.fields["vpc_id"].help_text = "Required for Lingjun preemptible resources, with a vSwitch and a " \
                                              "security group."
            self.fields["switch_id"].help_text = "Required for Lingjun preemptible resources."


ROWS: dict[str, type[forms.Form]] = {}
ROW_LABELS: dict[str, str] = {}
