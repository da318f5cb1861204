"""Resources: resource type, source, framework, per-role node rows, scheduling; under "More settings"
maximum duration, retention, developer machine and the advanced framework configuration.

Fields only parse types. Which roles a framework allows, quota-only fields, bid rules, limits and the
advanced keys are all checked by jobs.spec; this module only offers the choices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from jobs import catalog as C
from jobs.forms.widgets import KeepingRadioSelect, KeepingSelect, NumberField, choices

SECTION = "resources"
TITLE = "Resources"
DEPENDENT = ("resource_type", "source", "framework", "bid_method", "node_scheduling")

SCHEDULING_LABELS = {
    "intelligent": "Intelligent (GPU jobs packed, CPU jobs spread)",
    "centralized": "Centralized (as few nodes as possible)",
    "spread": "Spread (over as many nodes as possible)",
}
UNIT_LABELS = {"minutes": "minutes", "hours": "hours", "days": "days"}


def _number(**attrs: Any) -> forms.NumberInput:
    return forms.NumberInput(attrs={"step": "any", **attrs})


class Form(forms.Form):
    resource_type = forms.CharField(
        label="Resource type", required=False, widget=forms.RadioSelect(choices=choices(C.RESOURCE_TYPES)),
        help_text="Lingjun resources are offered only in " + ", ".join(C.LINGJUN_REGIONS) + ".",
    )
    source = forms.CharField(label="Source", required=False, widget=forms.RadioSelect(choices=choices(C.SOURCES)))
    quota_id = forms.CharField(label="Resource quota", required=False, help_text="The quota ID, e.g. quota12345.",
                               widget=forms.TextInput(attrs={"list": "quota-options", "autocomplete": "off"}))
    priority = forms.IntegerField(label="Priority", required=False, widget=forms.NumberInput(),
                                  help_text="1 (lowest) to 9 (highest).")
    framework = forms.CharField(label="Framework", required=False,
                                widget=KeepingSelect(choices=[(name, name) for name in C.FRAMEWORKS]))
    node_scheduling = forms.BooleanField(label="Node-specific scheduling", required=False,
                                         help_text="Run the job on compute nodes you choose.")
    idle_resources = forms.BooleanField(label="Use idle resources", required=False,
                                        help_text="Run on idle capacity of other quotas.")
    cpu_affinity = forms.BooleanField(label="CPU affinity", required=False,
                                      help_text="Bind processes to cores (general computing quotas).")
    scheduling_policy = forms.CharField(label="Scheduling policy", required=False,
                                        widget=forms.RadioSelect(choices=choices(SCHEDULING_LABELS)))
    bid_method = forms.CharField(label="Bid price", required=False,
                                 widget=KeepingRadioSelect(choices=choices(C.BID_METHODS), labels=C.BID_METHODS))
    spot_discount = forms.IntegerField(
        label="Maximum discount", required=False,
        widget=KeepingSelect(choices=[("", "Choose a discount"), *((str(d), f"{d}%") for d in C.SPOT_DISCOUNTS)]),
        help_text="Of the instance type's market price.",
    )
    spot_price = NumberField(label="Maximum price (CNY per minute)", required=False, widget=_number())
    max_duration = forms.IntegerField(label="Maximum duration", required=False, widget=forms.NumberInput(),
                                      help_text="Jobs that run longer are stopped automatically.")
    max_duration_unit = forms.CharField(label="Unit", required=False,
                                        widget=KeepingSelect(choices=choices(UNIT_LABELS)))
    retention = forms.IntegerField(label="Retention period", required=False, widget=forms.NumberInput(),
                                   help_text="How long finished or failed jobs are kept. Empty: not kept.")
    retention_unit = forms.CharField(label="Unit", required=False,
                                     widget=KeepingSelect(choices=choices(UNIT_LABELS)))
    dsw = forms.BooleanField(label="Start developer machine (DSW)", required=False,
                             help_text="For online debugging: Actions → DSW in the job's instance list.")
    advanced = forms.CharField(
        label="Advanced framework configuration", required=False,
        # Kept in the browser across HTMX swaps: it may hold RayRedisPassword, which pages never echo.
        widget=forms.Textarea(attrs={"rows": 2, "class": "mono", "hx-preserve": "true",
                                     "placeholder": "createSvcForAllWorkers=true,customPortNumPerWorker=100"}),
        help_text='key=value pairs separated by commas, or JSON such as {"ReleaseResourcePolicy": "pod-exit"}.',
    )

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if (ui or {}).get("resource_type") == "lingjun":
            # Only the bids Lingjun takes are offered; one chosen before switching to Lingjun stays shown, with
            # jobs.spec's message at it, rather than vanish from the page.
            self.fields["bid_method"].widget.choices = [(m, C.BID_METHODS[m]) for m in C.LINGJUN_SPOT_BID_METHODS]


def instance_type_label(spec: Mapping[str, Any]) -> str:
    gpu = f"{spec.get('Gpu')} × {spec.get('GpuType') or 'GPU'}" if spec.get("Gpu") else "no GPU"
    label = f"{spec.get('InstanceType')} · {spec.get('Cpu')} vCPU · {spec.get('Memory')} GiB · {gpu}"
    return label if spec.get("IsAvailable", True) else label + " (unavailable)"


class RoleForm(forms.Form):
    role = forms.CharField(label="Role", required=False)
    count = forms.IntegerField(label="Nodes", required=False, widget=forms.NumberInput())
    instance_type = forms.CharField(label="Instance type", required=False)
    cpu = NumberField(label="CPU cores", required=False, widget=_number())
    gpu = forms.IntegerField(label="GPUs", required=False, widget=forms.NumberInput())
    memory_gib = NumberField(label="Memory (GiB)", required=False, widget=_number())
    shared_memory_gib = NumberField(label="Shared memory (GiB)", required=False, widget=_number())
    node_names = forms.CharField(label="Nodes to run on", required=False,
                                 help_text="Node names separated by commas.")

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        ui = ui or {}
        framework = C.FRAMEWORKS.get(ui.get("framework") or "")
        if framework and framework.custom_worker_roles:
            # Ray's "Add role" makes Worker-<name> roles of your own naming.
            self.fields["role"].widget = forms.TextInput(attrs={"list": "ray-roles"})
            self.fields["role"].help_text = "Head, Worker or Worker-<name> (lower-case letters, digits, '-')."
        else:
            roles = framework.roles if framework else ("Worker",)
            self.fields["role"].widget = KeepingSelect(choices=[(r, r) for r in roles])
        catalog = ui.get("catalog")
        specs = getattr(catalog, "specs", None)
        if specs is not None:
            wanted = "Lingjun" if ui.get("resource_type") == "lingjun" else "ECS"
            offered = [s for s in specs if s.get("ResourceType", "ECS") == wanted]
            self.fields["instance_type"].widget = KeepingSelect(
                choices=[("", "Choose an instance type"),
                         *((s["InstanceType"], instance_type_label(s)) for s in offered)]
            )
        else:
            self.fields["instance_type"].widget.attrs["placeholder"] = "ecs.g6.large"


ROWS = {"roles": RoleForm}
ROW_LABELS = {"roles": "Role"}


def initial_roles(framework: str) -> list[str]:
    """The role rows a framework starts with: its required roles (Ray: Head plus one Worker)."""
    fw = C.FRAMEWORKS.get(framework)
    if fw is None:
        return ["Worker"]
    roles = list(fw.required) or [fw.roles[-1] if "Worker" not in fw.roles else "Worker"]
    if fw.custom_worker_roles and "Worker" not in roles:
        roles.append("Worker")
    return roles


def next_role(framework: str, taken: list[str]) -> str:
    """The role "Add role" adds: the framework's next unused role; Ray gets Worker-<n> roles."""
    fw = C.FRAMEWORKS.get(framework)
    if fw is None:
        return "Worker"
    for role in fw.roles:
        if role not in taken:
            return role
    if fw.custom_worker_roles:
        n = 1
        while f"Worker-{n}" in taken:
            n += 1
        return f"Worker-{n}"
    return fw.roles[0]
