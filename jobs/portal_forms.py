"""Forms of the team portal pages: workspace settings, members, guardrail policy, audit filters, tokens,
templates and import. Field-level parsing only; the job rules stay in jobs.spec."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.validators import RegexValidator

from jobs import access, catalog, export, notify, policies, spec
from jobs.forms import environment
from jobs.forms import wizard as glue
from jobs.models import AuditEvent, Membership, Webhook, Workspace
from jobs.templates_lib import DESCRIPTION_MAX, LOCKABLE, name_twin

_region = RegexValidator(r"^[a-z]{2,}(-[a-z0-9]+)+$", "A region id such as cn-hangzhou.")
_endpoint = RegexValidator(
    r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$",
    "A host name with an optional port, without http:// (e.g. pai-dlc.cn-hangzhou.aliyuncs.com).",
)
_profile = RegexValidator(r"^[A-Za-z0-9_.-]{1,64}$", "Letters, digits, '_', '.' and '-' only.")
_dlc_workspace = RegexValidator(r"^[A-Za-z0-9_-]{1,64}$", "Letters, digits, '_' and '-' only.")

SETTINGS_FIELDS = ["name", "region", "endpoint", "dlc_workspace_id", "credential_profile", "role_arn", "quotas"]
# The binding: which backend a workspace talks to, which DLC workspace there and with whose credentials, so which
# jobs its sync imports and its members read. A superuser's to set (a workspace admin could otherwise bind another
# team's DLC workspace, endpoint or credentials and read that team's jobs), and one DLC workspace per console one.
BINDING_FIELDS = ("region", "endpoint", "dlc_workspace_id", "credential_profile", "role_arn")
QUOTA_KINDS = {"general": ("general", False), "general-2.0": ("general", True), "lingjun": ("lingjun", False)}
_quota_id = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
QUOTA_EXAMPLE = "quota12345, general, Team GPUs"  # commas between the parts: a name may hold spaces
# A quota's name is a label of the console's own (DLC's API never takes it; the reference gives no limit): bounded as
# Alibaba Cloud bounds its resources' names (ECS instance names: at most 128 characters). Unbounded, a 5,000-character
# name was saved, offered in the wizard and written into the audit log whole.
QUOTA_NAME_MAX = 128


class QuotaListField(forms.CharField):
    """Quotas as lines `<quota id>, <general | general-2.0 | lingjun>, <name>`: easier to paste than JSON.

    `kept`: the quotas already saved, {id: name}; a saved name longer than QUOTA_NAME_MAX (stored before the limit)
    stays valid for its quota, so the workspace's other settings still save."""

    widget = forms.Textarea(attrs={"rows": 4, "placeholder": QUOTA_EXAMPLE})
    kept: Mapping[str, str] = {}

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, list):
            kinds = {v: k for k, v in QUOTA_KINDS.items()}
            return "\n".join(
                f"{q['id']}, {kinds[(q['resource_type'], bool(q.get('general_computing_2_0')))]}, {q.get('name', '')}"
                .rstrip(", ") for q in value
            )
        return value or ""

    def to_python(self, value: Any) -> list[dict[str, Any]]:
        quotas, seen = [], set()
        for number, line in enumerate((value or "").splitlines(), start=1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split(",", 2)]
            if len(parts) < 2 or not _quota_id.fullmatch(parts[0]):
                raise forms.ValidationError(f"Line {number}: expected '<quota id>, <type>, <name>' with commas "
                                            f"between them, e.g. {QUOTA_EXAMPLE}.")
            if parts[1] not in QUOTA_KINDS:
                raise forms.ValidationError(f"Line {number}: the type must be one of {', '.join(QUOTA_KINDS)}.")
            if parts[0] in seen:
                raise forms.ValidationError(f"Line {number}: quota {parts[0]} is listed twice.")
            seen.add(parts[0])
            name = parts[2] if len(parts) > 2 else ""
            if len(name) > QUOTA_NAME_MAX and self.kept.get(parts[0]) != name:
                raise forms.ValidationError(f"Line {number}: the quota name is {len(name):,} characters long; at most "
                                            f"{QUOTA_NAME_MAX} are allowed.")
            kind, gc2 = QUOTA_KINDS[parts[1]]
            quotas.append({"id": parts[0], "name": name, "resource_type": kind, "general_computing_2_0": gc2})
        return quotas


class BindingCheck(forms.ModelForm):
    """A workspace form that refuses a binding another console workspace has (binding_problem), at the DLC
    workspace ID. `reveal`: whether the error may name that workspace."""

    reveal = False

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        fields = ("backend", *BINDING_FIELDS)
        if any(name in self.errors for name in fields):
            return data
        # instance still holds the saved values here: the form copies its own onto it only after clean().
        candidate = Workspace(pk=self.instance.pk, **{n: data.get(n, getattr(self.instance, n)) for n in fields})
        # Only a new binding is checked: one bound twice before this check keeps working (and saving) as it was.
        rebound = self.instance.pk is None or any(getattr(candidate, n) != getattr(self.instance, n) for n in fields)
        if rebound and (problem := binding_problem(candidate, reveal=self.reveal)):
            self.add_error("dlc_workspace_id", problem)
        return data


class WorkspaceSettingsForm(BindingCheck):
    """What a workspace admin may change. There is deliberately no field for an AccessKey secret."""

    quotas = QuotaListField(
        label="Resource quotas", required=False,
        help_text=f"One per line: quota ID, type (general, general-2.0 or lingjun) and name (at most "
                  f"{QUOTA_NAME_MAX} characters), separated by commas, "
                  f"e.g. {QUOTA_EXAMPLE}. The wizard offers them, and the rules that depend on a quota's kind "
                  "(Lingjun, General Computing 2.0) use them.",
    )

    class Meta:
        model = Workspace
        fields = SETTINGS_FIELDS

    SUPERUSER_FIELDS = ("backend", *BINDING_FIELDS)

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reveal = user is None or user.is_superuser  # a superuser may know every workspace's name
        if not self.reveal:
            for name in self.SUPERUSER_FIELDS:
                if name in self.fields:
                    self.fields[name].disabled = True
                    self.fields[name].help_text = "Only a console superuser can change this."
        self.fields["region"].validators.append(_region)
        self.fields["endpoint"].validators.append(_endpoint)
        self.fields["dlc_workspace_id"].validators.append(_dlc_workspace)
        self.fields["credential_profile"].validators.append(_profile)
        saved = self.instance.quotas if isinstance(self.instance.quotas, list) else []
        self.fields["quotas"].kept = {str(q.get("id")): q.get("name") for q in saved if isinstance(q, Mapping)}

    def clean_role_arn(self) -> str:
        from jobs.spec.rules import role_arn_problem

        # The job's custom role's rule (ASCII digits, an account id of at most 16): the one definition of an ARN.
        arn = self.cleaned_data["role_arn"]
        if arn and (problem := role_arn_problem(arn)):
            raise forms.ValidationError(problem)
        return arn

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        # A kept name stays valid even if a case twin was saved before this check. An exact duplicate is refused here
        # too, in the same words (the model's own error is Django's wording). Only a superuser is told the other's
        # name: to a workspace admin it would say which other teams exist (as binding_problem does not).
        if name != self.instance.name:
            twin = name_twin(Workspace.objects.exclude(pk=self.instance.pk), name)
            if twin is not None:
                whom = f"The workspace '{twin}'" if self.reveal else "Another workspace"
                raise forms.ValidationError(f"{whom} has this name (names may not differ only in case).")
        return name


def _backends(workspace: Workspace) -> set[str]:
    """Names of the DLC service a workspace talks to: its endpoint, and on PAI-DLC its region too, whose endpoints
    (public, VPC) all reach the same workspaces."""
    from jobs.dlc import endpoint_for

    names = {f"endpoint:{endpoint_for(workspace).strip().lower()}"}
    if not workspace.is_local:
        names.add(f"region:{workspace.region}")
    return names


def binding_twin(workspace: Workspace) -> Workspace | None:
    """Another console workspace bound to the same DLC workspace as `workspace` (saved or not) on the same backend.

    A blank DLC workspace ID is the default workspace of the credentials, the same one only with the same profile
    and role."""
    others = Workspace.objects.exclude(pk=workspace.pk).filter(dlc_workspace_id=workspace.dlc_workspace_id)
    if not workspace.dlc_workspace_id:
        others = others.filter(credential_profile=workspace.credential_profile, role_arn=workspace.role_arn)
    mine = _backends(workspace)
    return next((other for other in others.order_by("pk") if _backends(other) & mine), None)


def binding_problem(workspace: Workspace, *, reveal: bool) -> str | None:
    """Why `workspace` may not have its binding, else None. The other workspace is named only if `reveal` (a
    superuser): to anyone else its name would say which teams exist and which DLC workspace each uses."""
    twin = binding_twin(workspace)
    if twin is None:
        return None
    what = (f"DLC workspace '{workspace.dlc_workspace_id}'" if workspace.dlc_workspace_id
            else "The default DLC workspace (no ID) of these credentials")
    whom = f"the console workspace '{twin.name}'" if reveal else "another console workspace"
    return (f"{what} on this backend is already bound to {whom}: two console workspaces on one DLC workspace would "
            "each import and show the other's jobs.")


class WorkspaceAdminForm(BindingCheck):
    """The Django admin's workspace form. Whoever may change workspaces there sees them all listed: the other
    workspace is named."""

    reveal = True

    class Meta:
        model = Workspace
        fields = ["name", "backend", *SETTINGS_FIELDS[1:]]


class WorkspaceCreateForm(WorkspaceSettingsForm):
    class Meta:
        model = Workspace
        fields = ["name", "backend", *SETTINGS_FIELDS[1:]]

    def clean_backend(self) -> str:
        from django.conf import settings

        backend = self.cleaned_data["backend"]
        if backend == Workspace.BACKEND_LOCAL and not settings.ALLOW_LOCALDLC:
            raise forms.ValidationError("localdlc workspaces are disabled by this server's settings.")
        return backend


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.ROLES, initial=Membership.MEMBER)

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = workspace

    def clean_username(self):
        name = self.cleaned_data["username"].strip()
        active = get_user_model().objects.filter(is_active=True)
        # Names are matched ignoring case as SSO signs people in (jobs.sso): "alice" adds the user Alice. The exact
        # spelling first, for users made twice before that rule.
        user = active.filter(username=name).first()
        if user is None:
            twins = list(active.filter(username__iexact=name)[:2])
            if len(twins) > 1:
                raise forms.ValidationError(f"Several users are named '{name}' but for case: type the name exactly.")
            user = next(iter(twins), None)
        if user is None:
            raise forms.ValidationError(f"There is no active user named '{name}'.")
        if Membership.objects.filter(workspace=self.workspace, user=user).exists():
            raise forms.ValidationError(f"'{user.get_username()}' is already a member of this workspace.")
        return user


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.ROLES)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.replace(",", "\n").splitlines() if line.strip()]


class PolicyForm(forms.Form):
    allowed_sources = forms.MultipleChoiceField(
        choices=list(catalog.SOURCES.items()), widget=forms.CheckboxSelectMultiple, required=False,
        help_text="Checked sources may be used. All checked: no restriction.",
    )
    max_nodes = forms.IntegerField(min_value=1, max_value=100000, required=False, label="Maximum nodes per job")
    max_gpus = forms.IntegerField(min_value=0, max_value=100000, required=False, label="Maximum GPUs per job")
    max_duration = forms.IntegerField(min_value=1, required=False, label="Cap on maximum duration",
                                      help_text=f"At most {spec.MAX_DURATION_DAYS} days, the longest any job may run.")
    max_duration_unit = forms.ChoiceField(choices=[(u, u) for u in catalog.DURATION_UNITS], initial="days",
                                          label="Unit")
    allowed_image_prefixes = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Allowed image registries or prefixes",
        help_text="One per line, e.g. registry.cn-hangzhou.aliyuncs.com/myteam/, matched from the start of the image "
                  "(no wildcards). Empty: any image.",
    )
    required_tag_keys = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, label="Required tag keys",
        help_text="One per line (or comma-separated), e.g. cost-centre.",
    )
    default_tags = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Default tags",
        help_text="key=value, one per line; prefilled in the wizard's new jobs. The API applies none: its clients "
                  "send their own tags.",
    )
    # The idle policy (jobs.idle): measured from DLC's monitoring, never on missing data.
    idle_after_minutes = forms.IntegerField(
        min_value=10, max_value=7 * 24 * 60, required=False, label="Flag jobs idle after (minutes)",
        error_messages={"min_value": "At least 10 minutes: a shorter window flags jobs that only pause, to save a "
                                     "checkpoint or load data."},
        help_text="A running job whose every pod stays under the threshold this long is marked idle. Empty: off. "
                  "At least 10: shorter flags jobs that only pause to checkpoint.")
    idle_threshold_percent = forms.IntegerField(
        min_value=1, max_value=100, initial=5, required=False, label="Idle under (percent)",
        help_text="GPU utilisation for GPU jobs, else CPU cores used of those requested. Empty: 5.")
    idle_stop_after_minutes = forms.IntegerField(
        min_value=10, max_value=30 * 24 * 60, required=False, label="Stop idle jobs after (minutes)",
        error_messages={"min_value": "At least 10 minutes, and longer than the time after which a job is "
                                     "flagged idle."},
        help_text="Idle this long (counted from when it went idle), the job is stopped and the reason recorded. "
                  "Empty: never stopped, only flagged.")

    def clean_allowed_sources(self) -> list[str]:
        chosen = self.cleaned_data["allowed_sources"]
        if not chosen:
            raise forms.ValidationError("Allow at least one resource source.")
        return [] if set(chosen) == set(catalog.SOURCES) else sorted(chosen)

    def clean_allowed_image_prefixes(self) -> list[str]:
        from jobs.spec.rules import image_prefix_problem

        prefixes = [line.strip() for line in self.cleaned_data["allowed_image_prefixes"].splitlines() if line.strip()]
        problems = [problem for p in prefixes if (problem := image_prefix_problem(p))]
        if problems:
            raise forms.ValidationError(problems)
        return prefixes

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        value, unit = data.get("max_duration"), data.get("max_duration_unit")
        # The cap above the job maximum would read as a limit while never limiting anything.
        if value and unit in catalog.DURATION_UNITS and \
                value * catalog.DURATION_UNITS[unit] > spec.MAX_DURATION_DAYS * catalog.DURATION_UNITS["days"]:
            self.add_error("max_duration", f"At most {spec.MAX_DURATION_DAYS} days "
                           f"({spec.MAX_DURATION_DAYS * catalog.DURATION_UNITS['days']} minutes): no job may run "
                           "longer, so a larger cap would limit nothing.")
        after, stop = data.get("idle_after_minutes"), data.get("idle_stop_after_minutes")
        if stop is not None and after is None and "idle_after_minutes" not in self.errors:
            self.add_error("idle_stop_after_minutes", "Set 'Flag jobs idle after' too: a job is stopped only once it "
                                                      "has been flagged idle.")
        elif stop is not None and after is not None and stop <= after:
            # Both count from when the job went idle: equal, it would be flagged and stopped in the same check.
            self.add_error("idle_stop_after_minutes", f"Must be longer than {after} minutes, the time after which a "
                                                      "job is flagged idle, so the owner is told before the job is "
                                                      "stopped.")
        return data

    def _check_tags(self, rows: list[dict[str, str]]) -> None:
        # Tag keys and values follow the job's own tag rules, which live in jobs.spec, and so does their number with
        # the console's own tag counted: 20 required keys made every job of the workspace impossible to create.
        sections = spec.defaults()
        sections["basic"]["tags"] = rows
        problems = {p: m for p, m in spec.validate_sections(sections, spec.Context(reserved_tags=policies.CONSOLE_TAGS))
                    .items() if p.startswith("basic.tags")}
        if problems:
            raise forms.ValidationError(" ".join(m for ms in problems.values() for m in ms))

    def clean_required_tag_keys(self) -> list[str]:
        keys = list(dict.fromkeys(_lines(self.cleaned_data["required_tag_keys"])))
        self._check_tags([{"key": k, "value": "x"} for k in keys])
        return keys

    def clean_default_tags(self) -> dict[str, str]:
        tags: dict[str, str] = {}
        for line in self.cleaned_data["default_tags"].splitlines():
            if not line.strip():
                continue
            key, sep, value = line.partition("=")
            if not sep or not key.strip():
                raise forms.ValidationError(f"Expected key=value, got {line.strip()!r}.")
            if key.strip() in tags:
                raise forms.ValidationError(f"'{key.strip()}' is given twice.")
            tags[key.strip()] = value.strip()
        self._check_tags([{"key": k, "value": v} for k, v in tags.items()])
        return tags

    def policy_values(self) -> dict[str, Any]:
        data = self.cleaned_data
        minutes = None
        if data.get("max_duration"):
            minutes = data["max_duration"] * catalog.DURATION_UNITS[data["max_duration_unit"]]
        return {
            "allowed_sources": data["allowed_sources"],
            "max_nodes": data["max_nodes"],
            "max_gpus": data["max_gpus"],
            "max_duration_minutes": minutes,
            "allowed_image_prefixes": data["allowed_image_prefixes"],
            "required_tag_keys": data["required_tag_keys"],
            "default_tags": data["default_tags"],
            "idle_after_minutes": data.get("idle_after_minutes"),
            "idle_threshold_percent": data.get("idle_threshold_percent") or 5,
            "idle_stop_after_minutes": data.get("idle_stop_after_minutes"),
        }

    @classmethod
    def initial_from(cls, row) -> dict[str, Any]:
        minutes, unit = row.max_duration_minutes, "days"
        if minutes:
            unit = next(u for u in ("days", "hours", "minutes") if minutes % catalog.DURATION_UNITS[u] == 0)
        return {
            "allowed_sources": row.allowed_sources or list(catalog.SOURCES),
            "max_nodes": row.max_nodes,
            "max_gpus": row.max_gpus,
            "max_duration": minutes // catalog.DURATION_UNITS[unit] if minutes else None,
            "max_duration_unit": unit,
            "allowed_image_prefixes": "\n".join(row.allowed_image_prefixes or []),
            "required_tag_keys": "\n".join(row.required_tag_keys or []),
            "default_tags": "\n".join(f"{k}={v}" for k, v in (row.default_tags or {}).items()),
            "idle_after_minutes": row.idle_after_minutes,
            "idle_threshold_percent": row.idle_threshold_percent,
            "idle_stop_after_minutes": row.idle_stop_after_minutes,
        }


class CostForm(forms.Form):
    """The workspace's price table and monthly budget (jobs.costs). Prices are per hour, >= 0, at most 4 decimals."""

    currency = forms.CharField(max_length=8, initial="CNY", label="Currency",
                               help_text="A label shown with every amount, e.g. CNY or USD (at most 8 characters).")
    instance_prices = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "placeholder": "ecs.gn6i-c4g1.xlarge 12.40"}), required=False,
        label="Price per hour of each instance type",
        help_text="One per line: <instance type> <price per hour>. A job on an instance type not listed has no "
                  "price (shown as such, never guessed).",
    )
    gpu_hour_price = forms.CharField(required=False, label="Quota jobs: price per GPU-hour",
                                     help_text="Blank: quota jobs with GPUs have no price. 0: GPUs cost nothing.")
    cpu_core_hour_price = forms.CharField(required=False, label="Quota jobs: price per CPU core-hour",
                                          help_text="Blank: quota jobs with CPU cores have no price. 0: cores cost "
                                                    "nothing (e.g. included in the GPU price).")
    monthly_budget = forms.CharField(required=False, label="Monthly budget",
                                     help_text="Per calendar month in the console's time zone. Blank: no budget.")
    refuse_when_spent = forms.BooleanField(required=False,
                                           label="Refuse new jobs once this month's budget is spent",
                                           help_text="Through the wizard, the API, clones, sweeps and schedules.")
    # What the page showed (CostForm.digest): a save from a page opened before another change would put back what
    # that change replaced, without a word (two tabs, two admins), and start a price table no one meant.
    seen = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean_currency(self) -> str:
        value = self.cleaned_data["currency"].strip()
        if not value.isprintable():
            raise forms.ValidationError("Letters, digits or symbols only.")
        return value

    def clean_instance_prices(self) -> dict[str, str]:
        from jobs import costs

        table, problems = costs.parse_table(self.cleaned_data["instance_prices"])
        if problems:
            raise forms.ValidationError(problems)
        return table

    def _price(self, name: str, places: int = 4) -> str | None:
        from jobs import costs

        text = self.cleaned_data[name].strip()
        if not text:
            return None
        price, problem = costs.parse_price(text, places)
        if price is None:
            raise forms.ValidationError(problem)
        return costs.plain(price)

    def clean_gpu_hour_price(self) -> str | None:
        return self._price("gpu_hour_price")

    def clean_cpu_core_hour_price(self) -> str | None:
        return self._price("cpu_core_hour_price")

    def clean_monthly_budget(self) -> str | None:
        return self._price("monthly_budget", places=2)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("refuse_when_spent") and not self.errors.get("monthly_budget") and not data.get("monthly_budget"):
            self.add_error("monthly_budget", "Set a monthly budget to refuse jobs beyond it.")
        return data

    def cost_values(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {key: data[key] for key in ("currency", "instance_prices", "gpu_hour_price", "cpu_core_hour_price",
                                           "monthly_budget", "refuse_when_spent")}

    @classmethod
    def initial_from(cls, row) -> dict[str, Any]:
        from jobs import costs

        def text(value: Any) -> str:
            return costs.plain(value) or ""

        shown = {"currency": row.currency, "instance_prices": costs.table_text(row.instance_prices or {}),
                 "gpu_hour_price": text(row.gpu_hour_price), "cpu_core_hour_price": text(row.cpu_core_hour_price),
                 "monthly_budget": text(row.monthly_budget), "refuse_when_spent": row.refuse_when_spent}
        return {**shown, "seen": cls.digest(shown)}

    @staticmethod
    def digest(shown: Mapping[str, Any]) -> str:
        """The stored values as the page shows them, in short: equal when nothing was changed since (a save that
        changed nothing moves no digest, as it moves no price)."""
        values = {key: value for key, value in shown.items() if key != "seen"}
        return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]

    def changed_since_shown(self, row) -> bool:
        """Whether the stored values changed since this form's page was shown (a form without `seen`, posted by
        hand, is taken as meant); if so, the form now carries the current digest, so saving again replaces them."""
        seen = self.cleaned_data.get("seen") or ""
        current = self.digest(self.initial_from(row))
        if not seen or seen == current:
            return False
        self.data = self.data.copy()
        self.data["seen"] = current
        return True


class AuditFilterForm(forms.Form):
    user = forms.CharField(required=False, max_length=150)
    action = forms.ChoiceField(required=False, choices=[("", "Any action"), *AuditEvent.ACTIONS])
    job = forms.CharField(required=False, max_length=256, help_text="Job id or part of its name.")
    since = forms.DateTimeField(required=False, error_messages={"invalid": "Enter a date (YYYY-MM-DD [HH:MM])."})
    until = forms.DateTimeField(required=False, error_messages={"invalid": "Enter a date (YYYY-MM-DD [HH:MM])."})
    before = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("since") and data.get("until") and data["until"] < data["since"]:
            self.add_error("until", "The end is before the start.")
        return data


class TokenForm(forms.Form):
    """A new API token's name and scope. Missing scope fields mean what a token meant before scopes existed
    (all workspaces, read-write), except the expiry, which defaults to 90 days as the page offers."""

    EXPIRY_CHOICES = [("7", "7 days"), ("30", "30 days"), ("90", "90 days"), ("365", "1 year"),
                      ("never", "No expiry")]

    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'CI pipeline'.")
    workspace = forms.ModelChoiceField(
        queryset=Workspace.objects.none(), required=False, empty_label="All my workspaces",
        help_text="The token sees nothing of any other workspace.",
        error_messages={"invalid_choice": "Choose one of your workspaces (or all of them)."},
    )
    read_only = forms.BooleanField(required=False, label="Read-only",
                                   help_text="It lists and reads only: no create, clone or stop.")
    expiry = forms.ChoiceField(choices=EXPIRY_CHOICES, required=False, initial="90", label="Expires in")

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["workspace"].queryset = access.workspaces_for(user).order_by("name")

    def clean_expiry(self) -> int | None:
        """Days until the token expires, None for never."""
        value = self.cleaned_data.get("expiry") or "90"
        return None if value == "never" else int(value)


class TemplateSaveForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Saving under an existing name adds a version.")
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX, widget=forms.Textarea(attrs={"rows": 2}),
                                  help_text=f"What the template is for; at most {DESCRIPTION_MAX} characters. For a "
                                            "version of an existing template, left empty it keeps its description.")
    note = forms.CharField(required=False, max_length=200, help_text="What changed in this version.")


class LockForm(forms.Form):
    locked = forms.MultipleChoiceField(
        choices=[(path, label) for path, (label, _paths) in LOCKABLE.items()],
        widget=forms.CheckboxSelectMultiple, required=False, label="Locked fields",
    )


class DefaultVersionForm(forms.Form):
    default_version = forms.IntegerField(required=False, min_value=1)


class WriteOnlyInput(forms.TextInput):
    """A text box that never sends a value back to the page, as PasswordInput(render_value=False), but shows what is
    typed: a webhook URL is a secret (its path often is the receiver's credential) that one must still read."""

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        return super().get_context(name, None, attrs)


class WebhookForm(forms.ModelForm):
    """A workspace webhook (jobs.notify). The URL and the signing secret are write-only: never shown (the URL only as
    host and fingerprint), blank on Edit keeps the saved one."""

    URL_RULES = ("http:// or https://; redirects are not followed. Not to this server itself, link-local or cloud "
                 "metadata addresses.")
    url = forms.CharField(
        label="URL", max_length=2000, required=False, help_text=URL_RULES,
        widget=WriteOnlyInput(attrs={"placeholder": "https://hooks.example.com/dlc", "autocomplete": "off",
                                     "spellcheck": "false"}),
    )

    events = forms.MultipleChoiceField(
        choices=notify.EVENTS, widget=forms.CheckboxSelectMultiple,
        label="Events to notify (job ends, idle jobs, the budget)",
        error_messages={"required": "Choose at least one event to notify."},
    )
    # strip=False: the receiver signs with the secret exactly as typed, spaces included.
    secret = forms.CharField(
        required=False, strip=False, max_length=200, label="Signing secret",
        widget=forms.PasswordInput(render_value=False),
        help_text="Optional. Each POST then carries X-DLC-Signature: sha256=<HMAC-SHA256 of the body>.",
    )
    clear_secret = forms.BooleanField(required=False, label="Remove the signing secret")

    class Meta:
        model = Webhook
        fields = ["name", "url", "events", "sweeps", "enabled"]
        widgets = {"sweeps": forms.RadioSelect}
        help_texts = {"sweeps": "How a sweep's trials are told: each trial's end as a job event, or one sweep.ended "
                                "once the last trial ended (if a trial ended as one of the job ends ticked above)."}

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = self.instance.workspace = workspace
        if self.instance.pk is None:
            # A new webhook starts with every job end ticked: an empty choice could only be refused.
            # Budget alerts are not a job's end: a receiver is told of them only once asked for.
            self.fields["events"].initial = [value for value, _ in notify.EVENTS if value != notify.BUDGET]
            self.fields["url"].required = True
            self.fields["url"].error_messages["required"] = "Enter the URL to POST to, e.g. " \
                                                            "https://hooks.example.com/dlc."
        else:
            self.fields["url"].help_text = (f"Left empty, the current URL stays ({self.instance.url_shown}); a URL "
                                            f"typed replaces it. {self.URL_RULES}")
        # Left out (a form from before the choice, a script): the webhook keeps its own, a new one the default.
        self.fields["sweeps"].required = False
        if self.instance.has_secret:
            self.fields["secret"].help_text = "A secret is set and stays hidden; type a new one to replace it."
        else:
            del self.fields["clear_secret"]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the webhook a name.")
        twin = name_twin(Webhook.objects.filter(workspace=self.workspace).exclude(pk=self.instance.pk), name)
        if twin == name:
            raise forms.ValidationError("This workspace already has a webhook of that name.")
        if twin is not None and name != self.instance.name:  # a case twin saved before this check keeps its name
            raise forms.ValidationError(f"This workspace has a webhook named '{twin}': names may not differ only in "
                                        "case.")
        return name

    def clean_sweeps(self) -> str:
        return self.cleaned_data["sweeps"] or self.instance.sweeps

    def clean_secret(self) -> str:
        secret = self.cleaned_data["secret"]
        if secret and not secret.strip():
            raise forms.ValidationError("A signing secret of only spaces is not a secret; type a real one, or leave "
                                        "the box empty.")
        return secret

    def clean_url(self) -> str:
        url = self.cleaned_data["url"].strip()
        if not url:
            return ""  # on Edit: the current URL stays (on Add the field is required)
        problem = notify.url_problem(url)
        if problem:
            raise forms.ValidationError(problem)
        return url

    SECRET_AGAIN = "Type the signing secret again: it is never sent back to the page."
    URL_AGAIN = "Type the URL again: it is never sent back to the page."

    def full_clean(self) -> None:
        super().full_clean()
        # The box comes back empty (it never shows a secret): a secret typed in a form refused for another field
        # would be lost unseen, and the fixed form saved unsigned (on Edit: keeping the old secret). Said after the
        # model's checks too (full_clean, not clean), so that every refusal says it, as the wizard's re-prompts do.
        if self._errors and self.data.get(self.add_prefix("secret")) and "secret" not in self._errors:
            keeps = " Left empty, the current secret stays." if self.instance.has_secret else ""
            self.add_error("secret", self.SECRET_AGAIN + keeps)
        # The URL likewise (it may carry the receiver's credential): on Edit, saved empty it would keep the old one.
        if self._errors and str(self.data.get(self.add_prefix("url")) or "").strip() and "url" not in self._errors:
            keeps = " Left empty, the current URL stays." if self.instance.pk else ""
            self.add_error("url", self.URL_AGAIN + keeps)

    def save(self, commit: bool = True) -> Webhook:
        webhook = super().save(commit=False)
        webhook.workspace = self.workspace
        if webhook.enabled and webhook.paused_at:
            webhook.resume()  # ticked "enabled" again on a paused webhook
        if self.cleaned_data.get("url"):
            webhook.set_url(self.cleaned_data["url"])
        if self.cleaned_data.get("clear_secret"):
            webhook.set_secret("")
        elif self.cleaned_data.get("secret"):
            webhook.set_secret(self.cleaned_data["secret"])
        if commit:
            webhook.save()
        return webhook


IMPORT_MAX_BYTES = 256 * 1024


class ImportForm(forms.Form):
    FORMATS = [("auto", "Detect"), ("json", "CreateJob JSON (or a job from GetJob)"),
               ("params", "dlc submit params file")]
    text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
                           label="Paste", max_length=IMPORT_MAX_BYTES)
    file = forms.FileField(required=False, label="…or upload a file")
    format = forms.ChoiceField(choices=FORMATS, initial="auto")
    job_type = forms.ChoiceField(
        choices=[("", "As the file says"), *((t, t) for t in export.PARAMS_SUBCOMMANDS)],
        initial="", required=False, label="Job type (params files only)",
        help_text="A params file has no job type key: `dlc submit tfjob` submits a TFJob. \"As the file says\" "
                  "reads it from a `# dlc submit <kind>` comment or a file name such as tfjob.params, else assumes "
                  "the wizard's default; the wizard's notes say which.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            if upload.size > IMPORT_MAX_BYTES:
                self.add_error("file", f"The file is larger than {IMPORT_MAX_BYTES // 1024} KiB.")
                return data
            try:
                data["text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                self.add_error("file", "The file is not UTF-8 text.")
                return data
        # A text refused by its own field (too long, a NUL) is not missing: one error, the field's.
        if not (data.get("text") or "").strip() and "file" not in self.errors and "text" not in self.errors:
            self.add_error("text", "Paste a CreateJob JSON or a params file, or upload one.")
        return data


def official_image_addresses(region: str) -> list[str]:
    """The image addresses the wizard offers as official in a region: an import recognises them."""
    return [address for address, _label in environment.official_images(region)]


def wizard_label(path: str, sections: Mapping) -> str:
    """A section path as the wizard labels it, given the wizard data (spec.inverse): "Resources › Worker ›
    Nodes" (a role row is titled by its role), "Environment › Alibaba Cloud image" (the image label follows the
    image type); "Job" for the whole job."""
    row = re.fullmatch(r"(\w+)\.(\w+)\[(\d+)\](?:\.(\w+))?", path)
    if row and row[2] in glue.LISTS and row[1] == glue.LISTS[row[2]]:
        module, index = glue.BY_SECTION[row[1]], int(row[3])
        rows = sections.get(row[1], {}).get(row[2]) or []
        role = rows[index].get("role") if row[2] == "roles" and index < len(rows) else None
        title = role if isinstance(role, str) and role else f"{module.ROW_LABELS[row[2]]} {index + 1}"
        parts = [module.TITLE, title]
        if row[4]:
            field = module.ROWS[row[2]].base_fields.get(row[4])
            parts.append(str(field.label) if field else row[4])
        return " › ".join(parts)
    section, _, name = path.partition(".")
    module = glue.BY_SECTION.get(section)
    if module is None:
        return "Job"
    if not name:
        return module.TITLE
    if name in module.ROWS:
        return f"{module.TITLE} › {module.ROW_LABELS[name]}s"
    if path == "environment.image":
        image_type = sections.get("environment", {}).get("image_type")
        return f"{module.TITLE} › {environment.Form(ui={'image_type': image_type}).fields['image'].label}"
    field = module.Form.base_fields.get(name)
    return f"{module.TITLE} › {field.label if field else name}"


def import_note_rows(notes: list[export.ImportNote], sections: Mapping) -> list[dict[str, str]]:
    """Import notes as the wizard page lists them (portal/_wizard_notes.html): the wizard's label of the field,
    the message, what was pasted and what became of it, and the API path for people who know the API."""
    return [{**note.to_dict(), "label": wizard_label(note.field, sections), "anchor": _anchor(note.field)}
            for note in notes]


def _anchor(path: str) -> str:
    """The id of the wizard element that shows a section path (see templates/jobs/wizard/): a field's box, a
    row, a list or a section."""
    row = re.fullmatch(r"(\w+)\.(\w+)\[(\d+)\](\.\w+)?", path)
    if row:
        return f"f-{glue.field_name(path)}" if row[4] else f"row-{row[2]}-{row[3]}"
    section, _, name = path.partition(".")
    if section not in glue.BY_SECTION:
        return ""
    if not name:
        return f"sec-{section}"
    return f"list-{name}" if name in glue.LISTS else f"f-{glue.field_name(path)}"
