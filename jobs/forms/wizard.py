"""Glue between the six section forms and jobs.spec: POST data -> wizard sections, spec errors -> fields.

HTML field names are spec section paths made form-safe, so any path spec reports maps to its field:
"resources.roles[0].count" <-> "resources-roles-0-count" (id "id_resources-roles-0-count").

Rows (tags, envs, datasets, storages, roles) are whatever indices the POST carries, renumbered 0..n-1, so
the add/remove buttons (`_add=tags`, `_remove=tags-2`) work as plain submit buttons without JavaScript.
No rule lives here: forms parse types, jobs.spec decides what is valid.

Fields and lists a job template locks (`locked`, section paths) are shown read-only with a "Locked by the
template" badge, and their rows are never added or removed; whether a locked value was changed anyway is
jobs.templates_lib's verdict (jobs.portal_wizard.apply).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.forms import BoundField, PasswordInput
from django.urls import reverse

from jobs import catalog as C
from jobs import dlc, spec
from jobs.forms import basic, environment, fault_tolerance, ram_role, resources, vpc
from jobs.forms.widgets import not_offered

log = logging.getLogger(__name__)

MODULES = (basic, environment, resources, vpc, fault_tolerance, ram_role)  # the console's order
BY_SECTION = {m.SECTION: m for m in MODULES}
LISTS: dict[str, str] = {name: m.SECTION for m in MODULES for name in m.ROWS}  # list -> its section
MAX_ROWS = 50  # more than any documented limit, so spec still reports "at most 20 tags"
PASSWORD = "environment-registry_password"
# Fields under each section's collapsible "More settings" part.
MORE_SETTINGS = {
    "environment": ("envs", "libs_mode", "libs", "requirements_dir", "code_mode", "code_source_id", "code_branch",
                    "code_commit", "code_mount_path", "code_upload_uri"),
    "resources": ("max_duration", "max_duration_unit", "retention", "retention_unit", "dsw", "advanced"),
}
MASK = spec.SECRET_PLACEHOLDER
CATALOG_TTL = 300  # seconds an instance-type list is reused per workspace
CATALOG_ERROR_TTL = 30  # a failure is remembered briefly, so every keystroke does not wait for a timeout
# A locked field stays in the form (the server compares its value with the template's) but cannot be edited.
LOCKED_ATTRS = {"readonly": "readonly", "aria-readonly": "true", "data-locked": "true", "tabindex": "-1"}
LOCKED_LIST = "Locked by the template: rows cannot be added to or removed from this list."


def field_name(path: str) -> str:
    """Section path -> HTML field name: "resources.roles[0].count" -> "resources-roles-0-count"."""
    return re.sub(r"\[(\d+)\]", r"-\1", path).replace(".", "-")


# --- instance types (ListEcsSpecs) -------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalog:
    """The instance types ListEcsSpecs offers; specs is None when the backend could not be asked."""

    specs: list[dict] | None = None
    error: str = ""

    def by_type(self) -> dict[str, dict] | None:
        return None if self.specs is None else {s["InstanceType"]: s for s in self.specs if s.get("InstanceType")}


def instance_catalog(workspace) -> Catalog:
    """ListEcsSpecs for a workspace through jobs.dlc (short timeout), cached for a few minutes."""
    key = f"wizard:ecs-specs:{workspace.pk}:{dlc.endpoint_for(workspace)}"
    found = cache.get(key)
    if isinstance(found, Catalog):
        return found
    specs: list[dict] = []
    try:
        for page in range(1, 6):  # 500 instance types is more than any region offers
            batch = dlc.list_ecs_specs(workspace, PageNumber=page, PageSize=100)
            specs += batch
            if len(batch) < 100:
                break
        result, ttl = Catalog(specs), CATALOG_TTL
    except Exception as exc:  # noqa: BLE001 - credentials or config problems must not break the page
        # Members get a short reason: the full text can name local credential files and the metadata service.
        # It goes to the log (redacted, once per CATALOG_ERROR_TTL) and the admins' settings page (the sync's).
        err = dlc.classify(exc)
        log.warning("ListEcsSpecs for workspace %s failed: %s", workspace.pk, dlc.redact(str(err))[:500])
        ask = " (ask an admin)" if dlc.needs_admin(err) else ""
        result = Catalog(None, f"Could not list instance types: {dlc.reason(err, code=False)}{ask}; "
                               "you can still type an instance type.")
        ttl = CATALOG_ERROR_TTL
    cache.set(key, result, ttl)
    return result


def context_for(workspace, catalog: Catalog | None = None) -> spec.Context:
    """The workspace's one validation context (jobs.policies), with the instance types this page shows."""
    from jobs import policies  # policies reads this module's catalog cache

    if not getattr(workspace, "pk", None):
        return spec.Context(reserved_tags=1)
    catalog = catalog if catalog is not None else instance_catalog(workspace)
    return policies.context_for(workspace, specs=catalog.by_type())


# --- sections <-> flat form data ---------------------------------------------------------------------------


def _text(value: Any, name: str) -> str | None:
    """A wizard value as form data; None leaves the key out (an unchecked checkbox)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        if name == "read_only":
            return "true" if value else "false"
        return "on" if value else None
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def sections_to_data(sections: Mapping) -> dict[str, str]:
    """Wizard sections (spec.defaults(), spec.inverse(...)) as the form data the page would post.

    Secrets are never written: a page built from this data shows an empty password field.
    """
    data: dict[str, str] = {}
    for module in MODULES:
        values = sections.get(module.SECTION) if isinstance(sections, Mapping) else None
        values = values if isinstance(values, Mapping) else {}
        for name in module.Form.base_fields:
            key = f"{module.SECTION}-{name}"
            text = _text(values.get(name, spec.FIELDS[module.SECTION].get(name)), name)
            if text is not None and key != PASSWORD:
                data[key] = text
        for list_name, row_form in module.ROWS.items():
            rows = values.get(list_name)
            for i, row in enumerate(rows if isinstance(rows, list) else []):
                row = row if isinstance(row, Mapping) else {}
                for name in row_form.base_fields:
                    text = _text(row.get(name, spec.ROW_FIELDS[list_name].get(name)), name)
                    if name == "value" and list_name == "envs" and row.get("secret") is True:
                        continue  # a secret variable's value, like the password, is typed on the page
                    if text is not None:
                        data[f"{module.SECTION}-{list_name}-{i}-{name}"] = text
    data["_framework_shown"] = data.get("resources-framework", "")
    return data


def _flatten(data: Any) -> dict[str, str]:
    """A QueryDict or a plain mapping as {name: last value}; anything odd becomes a string."""
    if data is None:
        return {}
    out: dict[str, str] = {}
    for key in list(data.keys()):
        value = data.get(key)
        if isinstance(value, list | tuple):
            value = value[-1] if value else ""
        out[str(key)] = "" if value is None else str(value)
    return out


# --- views for templates -----------------------------------------------------------------------------------


@dataclass
class FieldView:
    bf: BoundField
    path: str
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hidden: bool = False
    lock_id: str = ""  # the id of the "Locked by the template" badge describing this field, if locked

    @property
    def name(self) -> str:
        return self.bf.html_name

    @property
    def id(self) -> str:
        return self.bf.id_for_label or f"id_{self.bf.html_name}"

    @property
    def secret(self) -> bool:
        return self.bf.html_name == PASSWORD or isinstance(self.bf.field.widget, PasswordInput)

    @property
    def kind(self) -> str:
        widget = type(self.bf.field.widget).__name__
        return {"CheckboxInput": "checkbox", "RadioSelect": "radio", "HiddenInput": "hidden"}.get(widget, "input")


@dataclass
class RowView:
    list: str
    index: int
    label: str
    f: dict[str, FieldView]
    errors: list[str] = field(default_factory=list)
    focus: bool = False  # its Remove button takes the focus: the row above it was just removed

    @property
    def id(self) -> str:
        return f"row-{self.list}-{self.index}"

    @property
    def remove_value(self) -> str:
        return f"{self.list}-{self.index}"

    @property
    def remove_id(self) -> str:
        return f"remove-{self.list}-{self.index}"


@dataclass
class ListView:
    name: str
    section: str
    rows: list[RowView]
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    locked: bool = False
    refused: list[str] = field(default_factory=list)  # a row action the lock turned down, said at the list
    focus_add: bool = False  # the Add button takes the focus: the last row was just removed

    @property
    def id(self) -> str:
        return f"list-{self.name}"

    @property
    def lock_id(self) -> str:
        return f"lock-list-{self.name}"

    @property
    def can_add(self) -> bool:
        return not self.locked and len(self.rows) < MAX_ROWS


@dataclass
class SectionView:
    name: str
    title: str
    f: dict[str, FieldView]
    lists: dict[str, ListView]
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: bool = False
    ui: dict = field(default_factory=dict)
    more_open: bool = False
    shown: list[str] = field(default_factory=list)  # the places whose errors are shown, posted back as `_shown`

    @property
    def template(self) -> str:
        return f"jobs/wizard/sections/{self.name}.html"

    @property
    def id(self) -> str:
        return f"sec-{self.name}"

    @property
    def error_count(self) -> int:
        count = len(self.errors) + sum(len(v.errors) for v in self.f.values())
        for lv in self.lists.values():
            count += len(lv.errors) + sum(len(r.errors) + sum(len(v.errors) for v in r.f.values()) for r in lv.rows)
        return count


@dataclass
class Problem:
    anchor: str
    label: str
    message: str


# --- the wizard --------------------------------------------------------------------------------------------

_ROW_KEY = re.compile(r"(?P<section>[a-z_]+)-(?P<list>[a-z]+)-(?P<i>\d{1,6})-(?P<field>.+)")


class Wizard:
    """One POST (or prefilled data) bound to the six section forms, with spec's verdict mapped to fields."""

    def __init__(self, data: Any = None, *, catalog: Catalog | None = None, region: str = "cn-hangzhou",
                 context: spec.Context | None = None, show: frozenset[str] | set[str] | None = None,
                 locked: Iterable[str] = (), only: Iterable[str] | None = None) -> None:
        self.catalog = catalog or Catalog()
        self.context = context or spec.Context(region=region, specs=self.catalog.by_type(), reserved_tags=1)
        self.region = self.context.region
        self.data = _flatten(data)
        self.locked = set(locked)  # section paths a job template locks: "environment.command", "resources.roles"
        self.action, self.target = self._action()
        self.messages: dict[str, list[str]] = {}  # wizard-level problems by section path (row caps)
        self.refused: dict[str, list[str]] = {}  # row actions a lock turned down, by list path
        self.counts = self._compact_rows()
        self._reset_roles_on_framework_change()
        self._apply_row_action()
        self.ui = self._ui()
        self.forms = {m.SECTION: m.Form(self.data, prefix=m.SECTION, ui=self.ui) for m in MODULES}
        self.row_forms = {
            name: [BY_SECTION[section].ROWS[name](self.data, prefix=f"{section}-{name}-{i}", ui=self.ui)
                   for i in range(self.counts[name])]
            for name, section in LISTS.items()
        }
        self._lock_widgets()
        self.raw_sections = self._sections()
        # Hidden fields may still carry values (kept so switching back restores them); they never count.
        self.sections = spec.prune_inapplicable(self.raw_sections)
        # What the page shows from now on never holds a secret (the values above were parsed already).
        shown = mask(self.data)
        for form in [*self.forms.values(), *(f for forms in self.row_forms.values() for f in forms)]:
            form.data = shown
        self.checked = {m.SECTION for m in MODULES if f"_checked-{m.SECTION}" in self.data}
        if show is None:
            show = set(BY_SECTION) if self.action == "submit" else self.checked
        self.show = set(show)
        # Within the shown sections, the only places (section paths) whose errors may show, when given: a section
        # re-rendered because a choice changed shows what the user touched or already saw, not every new field; and a
        # value chosen before the choice that no longer offers it (a bid by price once Lingjun spot is chosen, a
        # read-write public dataset), kept on the page so its message says why, even if touched before a reload.
        self.only = None if only is None else set(only) | self._not_offered()
        self._errors: dict[str, list[str]] | None = None
        self._views: list[SectionView] | None = None

    # -- parsing ----------------------------------------------------------------------------------------------

    def _action(self) -> tuple[str, Any]:
        add = self.data.get("_add", "")
        if add in LISTS:
            return "add", add
        match = re.fullmatch(r"([a-z]+)-(\d{1,6})", self.data.get("_remove", ""))
        if match and match[1] in LISTS:
            return "remove", (match[1], int(match[2]))
        if "_add" in self.data or "_remove" in self.data or "_refresh" in self.data:
            return "refresh", None
        return "submit", None

    def _compact_rows(self) -> dict[str, int]:
        """Renumber each list's rows 0..n-1 in the order of their posted indices (gaps from removals)."""
        groups: dict[str, dict[int, dict[str, str]]] = {name: {} for name in LISTS}
        rest: dict[str, str] = {}
        for key, value in self.data.items():
            match = _ROW_KEY.fullmatch(key)
            if match and LISTS.get(match["list"]) == match["section"]:
                groups[match["list"]].setdefault(int(match["i"]), {})[match["field"]] = value
            else:
                rest[key] = value
        counts = {}
        for name, rows in groups.items():
            indices = sorted(rows)
            if len(indices) > MAX_ROWS:
                self.messages.setdefault(f"{LISTS[name]}.{name}", []).append(
                    f"At most {MAX_ROWS} rows can be entered here; the rest were dropped.")
                indices = indices[:MAX_ROWS]
            for new, old in enumerate(indices):
                for name_, value in rows[old].items():
                    rest[f"{LISTS[name]}-{name}-{new}-{name_}"] = value
            counts[name] = len(indices)
        self.data = rest
        return counts

    def _rows(self, name: str) -> list[dict[str, str]]:
        rows: list[dict[str, str]] = [{} for _ in range(self.counts[name])]
        for key, value in self.data.items():
            match = _ROW_KEY.fullmatch(key)
            if match and match["list"] == name and match["section"] == LISTS[name] and int(match["i"]) < len(rows):
                rows[int(match["i"])][match["field"]] = value
        return rows

    def _set_rows(self, name: str, rows: list[dict[str, str]]) -> None:
        prefix = f"{LISTS[name]}-{name}-"
        self.data = {k: v for k, v in self.data.items() if not k.startswith(prefix)}
        for i, row in enumerate(rows[:MAX_ROWS]):
            for key, value in row.items():
                self.data[f"{prefix}{i}-{key}"] = value
        self.counts[name] = min(len(rows), MAX_ROWS)

    def _list_locked(self, name: str) -> bool:
        return f"{LISTS[name]}.{name}" in self.locked

    def _reset_roles_on_framework_change(self) -> None:
        """A new framework brings its own role rows; the first row's resources carry over."""
        shown = self.data.get("_framework_shown", "")
        framework = self.data.get("resources-framework", "")
        if not shown or shown == framework or framework not in C.FRAMEWORKS:
            return
        if self._list_locked("roles"):
            # Replacing locked rows could only end in a lock error, and switching back would not restore them.
            self.refused.setdefault("resources.roles", []).append(
                "Locked by the template: the roles are kept for the new framework.")
            return
        old = self._rows("roles")
        keep = {k: v for k, v in (old[0] if old else {}).items() if k not in ("role", "count")}
        self._set_rows("roles", [{**keep, "role": role, "count": "1"} for role in resources.initial_roles(framework)])

    def _apply_row_action(self) -> None:
        name = self.target if self.action == "add" else self.target[0] if self.action == "remove" else None
        if name is not None and self._list_locked(name):
            # The buttons are not shown for a locked list; a stale page or a hand-made POST gets a no-op.
            self.refused.setdefault(f"{LISTS[name]}.{name}", []).append(LOCKED_LIST)
            return
        if self.action == "add":
            rows = self._rows(name)
            if len(rows) >= MAX_ROWS:
                self.messages.setdefault(f"{LISTS[name]}.{name}", []).append(f"At most {MAX_ROWS} rows.")
                return
            row = {k: _text(v, k) or "" for k, v in spec.ROW_FIELDS[name].items()}
            if name == "roles":
                taken = [r.get("role", "") for r in rows]
                row["role"] = resources.next_role(self.data.get("resources-framework", ""), taken)
            self._set_rows(name, [*rows, row])
        elif self.action == "remove":
            name, index = self.target
            rows = self._rows(name)
            if index < len(rows):
                self._set_rows(name, rows[:index] + rows[index + 1:])

    def _lock_widgets(self) -> None:
        for section, form in self.forms.items():
            for name, form_field in form.fields.items():
                if f"{section}.{name}" in self.locked:
                    form_field.widget.attrs.update(LOCKED_ATTRS)
        for name, forms in self.row_forms.items():
            if self._list_locked(name):
                for form in forms:
                    for form_field in form.fields.values():
                        # A secret variable's value is never part of a template: each job types its own.
                        if not isinstance(form_field.widget, PasswordInput):
                            form_field.widget.attrs.update(LOCKED_ATTRS)

    def _focus_after_remove(self, name: str) -> tuple[int | None, bool]:
        """After a Remove, the focus goes to the Remove of the row that took its place, else to Add (the
        removed button is gone, so without this keyboard users land on <body>): (row index, add)."""
        if self.action != "remove" or self.target[0] != name or self._list_locked(name):
            return None, False
        index = self.target[1]
        return (index, False) if index < self.counts[name] else (None, True)

    def _ui(self) -> dict:
        get = self.data.get
        return {
            "region": self.region,
            "image_type": get("environment-image_type") or "official",
            "framework": get("resources-framework") or spec.FIELDS["resources"]["framework"],
            "resource_type": get("resources-resource_type") or "general",
            "source": get("resources-source") or "public",
            "catalog": self.catalog,
        }

    @staticmethod
    def _value(form, name: str) -> Any:
        if name in form.errors:
            return form.data.get(form.add_prefix(name), "")  # spec sees what was typed; the form error wins
        return form.cleaned_data.get(name)

    def _sections(self) -> dict:
        sections: dict[str, dict] = {}
        for section, form in self.forms.items():
            sections[section] = {name: self._value(form, name) for name in form.fields}
        for name, forms in self.row_forms.items():
            sections[LISTS[name]][name] = [{k: self._value(f, k) for k in f.fields} for f in forms]
        return sections

    # -- verdict ---------------------------------------------------------------------------------------------

    @property
    def password(self) -> str:
        env = self.sections["environment"]
        return env.get("registry_password") or "" if env.get("image_type") == "address" else ""

    def _advanced(self) -> dict:
        parsed, _message = spec.parse_advanced(self.sections["resources"].get("advanced"))
        return parsed or {}

    def errors(self) -> dict[str, list[str]]:
        """Every problem keyed by section path: parse errors of the forms first, then spec's rules."""
        if self._errors is not None:
            return self._errors
        errors: dict[str, list[str]] = {}
        for form in [*self.forms.values(), *(f for forms in self.row_forms.values() for f in forms)]:
            for name, messages in form.errors.items():
                path = self._path_of(form, name)
                errors.setdefault(path, []).extend(messages)
        parsed = set(errors)
        for path, messages in spec.validate_sections(self.sections, self.context).items():
            if path not in parsed:
                errors.setdefault(path, []).extend(messages)
        if self._advanced().get("RayRedisPassword") == MASK:
            errors.setdefault("resources.advanced", []).append(
                "Type RayRedisPassword again: secrets are never copied or sent back to the page.")
        for i, row in self._secret_envs():
            if row.get("value") == MASK:
                errors.setdefault(f"environment.envs[{i}].value", []).append(
                    f"Type the value of {row.get('key') or 'this variable'} again: secrets are never copied or sent "
                    "back to the page.")
        for path, messages in self.messages.items():
            errors.setdefault(path, []).extend(messages)
        self._errors = errors
        return errors

    @property
    def is_valid(self) -> bool:
        return not self.errors()

    def notes(self) -> dict[str, list[str]]:
        return spec.notes(self.sections, self.context)

    def body(self, workspace_id: str = "") -> dict:
        """The CreateJob body to store: no secrets (they travel sealed, see secrets())."""
        return spec.build(self.sections, workspace_id=workspace_id or None)

    def secrets(self) -> dict[str, str]:
        found = {}
        if self.password and self.password != MASK:
            found["registry_password"] = self.password
        redis = self._advanced().get("RayRedisPassword")
        if isinstance(redis, str) and redis and redis != MASK and self.sections["resources"].get("framework") == "Ray":
            found["RayRedisPassword"] = redis  # the key jobs.lifecycle.wire_body puts back
        for _i, row in self._secret_envs():
            key, value = str(row.get("key") or "").strip(), str(row.get("value") or "").strip()
            if key and value and value != MASK:
                found[spec.SECRET_ENV_PREFIX + key] = value  # jobs.lifecycle.wire_body puts it into Envs
        return found

    def _secret_envs(self) -> list[tuple[int, dict]]:
        """(index, row) of the environment variables ticked Secret."""
        rows = self.sections["environment"].get("envs") or []
        return [(i, row) for i, row in enumerate(rows) if isinstance(row, dict) and row.get("secret") is True]

    def preview_body(self, workspace_id: str = "") -> dict:
        """The exact CreateJob JSON with every secret shown as a mask."""
        body = self.body(workspace_id)
        secrets = self.secrets()
        if "registry_password" in secrets:
            for role in body.get("JobSpecs", []):
                role.setdefault("ImageConfig", {})["Password"] = MASK
        if "RayRedisPassword" in self._advanced():
            body.setdefault("Settings", {}).setdefault("AdvancedSettings", {})["RayRedisPassword"] = MASK
        return body

    def hints(self) -> dict:
        return spec.hints_from_sections(self.sections)

    # -- placement of errors and notes ----------------------------------------------------------------------

    @staticmethod
    def _path_of(form, name: str) -> str:
        html = form.add_prefix(name)
        match = _ROW_KEY.fullmatch(html)
        if match:
            return f"{match['section']}.{match['list']}[{match['i']}].{match['field']}"
        section, _, rest = html.partition("-")
        return f"{section}.{rest}"

    def _not_offered(self) -> set[str]:
        """The paths of the fields whose value their widget keeps only because the choices made no longer offer it
        (widgets.not_offered)."""
        return {self._path_of(form, name)
                for form in [*self.forms.values(), *(f for forms in self.row_forms.values() for f in forms)]
                for name, form_field in form.fields.items()
                if not_offered(form_field.widget, self.data.get(form.add_prefix(name)))}

    def _hidden(self) -> set[str]:
        hidden = spec.hidden_fields(self.raw_sections, self.counts["roles"])
        if self.ui["image_type"] != "address":
            hidden.add("environment.registry_password")
        return hidden

    def views(self) -> list[SectionView]:
        """Everything the templates render, section by section, errors shown only where asked."""
        if self._views is not None:
            return self._views
        errors = self.errors() if self.show else {}
        hidden = self._hidden()
        placed: dict[str, list[str]] = {}
        note_at: dict[str, list[str]] = {}
        everything = self.show >= set(BY_SECTION)
        for path, messages in errors.items():
            section = path.split(".")[0].split("[")[0]
            if section in self.show or (everything and section not in BY_SECTION):
                anchor = self._anchor_path(path)
                if self.only is None or _within(anchor, self.only):
                    placed.setdefault(anchor, []).extend(messages)
        for path, messages in self.notes().items():
            note_at.setdefault(self._anchor_path(path), []).extend(messages)
        out = []
        for module in MODULES:
            section = module.SECTION
            form = self.forms[section]

            url = reverse("wizard_section", args=[section])
            refresh = {"hx-post": url, "hx-target": f"#sec-{section}", "hx-swap": "outerHTML", "hx-trigger": "change",
                       "hx-sync": "closest section:replace"}
            for name in module.DEPENDENT:
                # hx-sync: a newer request for the section aborts an older one, so a quick second choice is not
                # lost when the first answer replaces the element that made it.
                form.fields[name].widget.attrs.update(refresh)
            for name, names in getattr(module, "ROW_DEPENDENT", {}).items():
                for row_form in self.row_forms[name]:
                    for field_name_ in names:
                        row_form.fields[field_name_].widget.attrs.update(refresh)

            def fv(bf: BoundField, path: str, lock_id: str = "") -> FieldView:
                if not lock_id and path in self.locked:
                    lock_id = f"lock-{bf.html_name}"
                view = FieldView(bf, path, placed.get(path, []), note_at.get(path, []), path in hidden, lock_id)
                described = [lock_id] if lock_id else []
                if view.errors:
                    bf.field.widget.attrs["aria-invalid"] = "true"
                    described.append(f"err-{bf.html_name}")
                if described:
                    bf.field.widget.attrs["aria-describedby"] = " ".join(described)
                return view

            fields = {name: fv(form[name], f"{section}.{name}") for name in form.fields}
            lists = {}
            for name in module.ROWS:
                path = f"{section}.{name}"
                focus_row, focus_add = self._focus_after_remove(name)
                lv = ListView(name, section, [], placed.get(path, []), note_at.get(path, []),
                              locked=self._list_locked(name), refused=self.refused.get(path, []), focus_add=focus_add)
                # Row fields share the list's one badge: it is shown once, above the rows.
                lock_id = lv.lock_id if lv.locked else ""
                for i, row_form in enumerate(self.row_forms[name]):
                    base = f"{section}.{name}[{i}]"
                    label = f"{module.ROW_LABELS[name]} {i + 1}"
                    if name == "roles":
                        label = str(row_form["role"].value() or label)
                    lv.rows.append(RowView(name, i, label,
                                           {k: fv(row_form[k], f"{base}.{k}", lock_id) for k in row_form.fields},
                                           placed.get(base, []), focus=i == focus_row))
                lists[name] = lv
            view = SectionView(section, module.TITLE, fields, lists, placed.get(section, []),
                               note_at.get(section, []), checked=section in self.show, ui=self.ui,
                               shown=sorted(p for p in placed if p.split(".")[0].split("[")[0] == section))
            view.more_open = self._more_open(view)
            out.append(view)
        out[0].errors = placed.get("", []) + out[0].errors
        self._views = out
        return out

    def _more_open(self, view: SectionView) -> bool:
        """"More settings" starts open when it holds a value or a problem, so nothing set is out of sight."""
        names = MORE_SETTINGS.get(view.name, ())
        if any(view.f[n].errors for n in names if n in view.f):
            return True
        if any(view.lists[n].errors or any(r.errors or any(v.errors for v in r.f.values()) for r in view.lists[n].rows)
               for n in names if n in view.lists):
            return True
        values = self.sections[view.name]
        defaults = spec.FIELDS[view.name]
        return any(values.get(n) not in (defaults.get(n), None, "", []) for n in names)

    def _anchor_path(self, path: str) -> str:
        """The closest thing on the page that shows a path: its field, its row, its list or its section."""
        section = path.split(".")[0].split("[")[0]
        if section not in BY_SECTION:
            return ""
        match = re.fullmatch(r"(\w+)\.(\w+)\[(\d+)\](?:\.(\w+))?.*", path)
        if match and match[2] in LISTS and int(match[3]) < self.counts[match[2]]:
            row = f"{match[1]}.{match[2]}[{match[3]}]"
            form = self.row_forms[match[2]][int(match[3])]
            return f"{row}.{match[4]}" if match[4] in form.fields else row
        match = re.fullmatch(r"(\w+)\.(\w+).*", path)
        if match:
            if match[2] in LISTS:
                return f"{match[1]}.{match[2]}"
            if match[2] in self.forms[section].fields:
                return f"{match[1]}.{match[2]}"
        return section

    def summary(self) -> list[Problem]:
        """Every shown error, in page order, with the id of the element to jump to."""
        problems = []
        for view in self.views():
            for message in view.errors:
                problems.append(Problem(view.id, view.title, message))
            for fv in view.f.values():
                problems += [Problem(fv.id if not fv.hidden else view.id, fv.bf.label, m) for m in fv.errors]
            for lv in view.lists.values():
                title = BY_SECTION[view.name].ROW_LABELS[lv.name] + "s"
                problems += [Problem(lv.id, title, m) for m in lv.errors]
                for row in lv.rows:
                    problems += [Problem(row.id, row.label, m) for m in row.errors]
                    for fv in row.f.values():
                        problems += [Problem(fv.id, f"{row.label} › {fv.bf.label}", m) for m in fv.errors]
        return problems

    @staticmethod
    def label(name: str) -> str:
        return field_label(name)

    def masked_data(self) -> dict[str, str]:
        return mask(self.data)


def _within(anchor: str, only: set[str]) -> bool:
    """Whether an error placed at `anchor` may show: the place itself was touched or shown, or, for a list or a
    row, one of its fields was ("resources.roles" holds "resources.roles[0].instance_type")."""
    if anchor in only:
        return True
    return "." in anchor and any(o.startswith((anchor + "[", anchor + ".")) for o in only)


def path_of(name: str) -> str:
    """HTML field name -> section path (the inverse of field_name): "resources-roles-0-count" ->
    "resources.roles[0].count"; "" for a name that is no wizard field."""
    match = _ROW_KEY.fullmatch(name)
    if match and LISTS.get(match["list"]) == match["section"]:
        return f"{match['section']}.{match['list']}[{match['i']}].{match['field']}"
    section, _, rest = name.partition("-")
    return f"{section}.{rest}" if section in BY_SECTION and rest else ""


def row_dependent(name: str) -> bool:
    """Whether an HTML field name is a row's choice that re-renders its section (a module's ROW_DEPENDENT)."""
    match = _ROW_KEY.fullmatch(name)
    if not match or LISTS.get(match["list"]) != match["section"]:
        return False
    return match["field"] in getattr(BY_SECTION[match["section"]], "ROW_DEPENDENT", {}).get(match["list"], ())


def problem_count(wizard: Wizard, *extra: Mapping[str, list[str]]) -> int:
    """The one count of problems the page states (the API panel, the sum of the badges, the error summary): every
    message of the wizard's errors, each placed once on the page when everything is shown, plus the messages of
    the boxes outside the sections (`extra`: the sweep's and the run-after box's errors by field)."""
    return sum(len(m) for m in wizard.errors().values()) + sum(len(m) for box in extra for m in box.values())


def field_label(name: str) -> str:
    """A readable label for a form field name, e.g. "Resources › Role 1 › Nodes"."""
    match = _ROW_KEY.fullmatch(name)
    if match and match["list"] in LISTS and match["section"] in BY_SECTION:
        module = BY_SECTION[match["section"]]
        field_ = module.ROWS[match["list"]].base_fields.get(match["field"])
        return f"{module.TITLE} › {module.ROW_LABELS[match['list']]} {int(match['i']) + 1} › " \
               f"{field_.label if field_ else match['field']}"
    section, _, rest = name.partition("-")
    module = BY_SECTION.get(section)
    if module is None:
        return name
    field_ = module.Form.base_fields.get(rest)
    return f"{module.TITLE} › {field_.label if field_ else rest}"


_SECRET_FLAG = re.compile(r"environment-envs-(\d{1,6})-secret")


def mask(data: Mapping[str, str]) -> dict[str, str]:
    """Form data safe to put on a page: no registry password, no value of a variable ticked Secret,
    RayRedisPassword shown as the mask."""
    out = dict(data)
    out.pop(PASSWORD, None)
    for key, flag in data.items():
        found = _SECRET_FLAG.fullmatch(key)
        if found and environment._ticked(flag):
            out.pop(f"environment-envs-{found[1]}-value", None)
    advanced, _ = spec.parse_advanced(out.get("resources-advanced", ""))
    if advanced and advanced.get("RayRedisPassword") not in (None, "", MASK):
        advanced["RayRedisPassword"] = MASK
        out["resources-advanced"] = spec.format_advanced(advanced)
    return out
