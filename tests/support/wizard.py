"""Helpers for the wizard tests: form data the way the page posts it, and a workspace bound to a real
localdlc process (the `localdlc` fixture), so ListEcsSpecs and CreateJob go through the real SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobs import spec
from jobs.forms import wizard as glue

IMAGE = "registry.example.com/team/pytorch:2.3"

# Three valid starting points, one per resource source; each test case changes a few fields of one.
BASES: dict[str, dict[str, str | None]] = {
    "public": {
        "basic-name": "train-1",
        "environment-image_type": "address",
        "environment-image": IMAGE,
        "environment-command": "echo hello",
        "resources-roles-0-instance_type": "ecs.g6.large",
    },
    "quota": {
        "basic-name": "train-quota",
        "environment-image_type": "address",
        "environment-image": IMAGE,
        "environment-command": "echo hello",
        "resources-source": "quota",
        "resources-quota_id": "quota-abc",
        "resources-roles-0-instance_type": "",
        "resources-roles-0-cpu": "4",
        "resources-roles-0-memory_gib": "8",
    },
    "spot": {
        "basic-name": "train-spot",
        "environment-image_type": "address",
        "environment-image": IMAGE,
        "environment-command": "echo hello",
        "resources-source": "spot",
        "resources-bid_method": "discount",
        "resources-spot_discount": "50",
        "resources-roles-0-instance_type": "ecs.g6.large",
    },
}


def form_data(base: str = "public", **changes: Any) -> dict[str, str]:
    """The data a fresh page posts for one of BASES, then changes applied (None removes a key).

    Keyword names use `__` for `-`: resources__roles__0__count="2" sets resources-roles-0-count.
    """
    data = glue.sections_to_data(spec.defaults())
    data.update({k: v for k, v in BASES[base].items() if v is not None})
    for key, value in changes.items():
        key = key.replace("__", "-")
        if value is None:
            data.pop(key, None)
        else:
            data[key] = str(value)
    return data


def credentials_file(localdlc, directory: Path, name: str = "localdlc-credentials.ini") -> Path:
    """An alibabacloud_credentials INI with the localdlc instance's AccessKey pair (as the stack writes)."""
    path = directory / name
    path.write_text(f"[localdlc]\ntype = access_key\naccess_key_id = {localdlc.access_key_id}\n"
                    f"access_key_secret = {localdlc.access_key_secret}\n")
    path.chmod(0o600)
    return path


def local_workspace(localdlc, directory: Path, settings, name: str = "Wizard"):
    """A console workspace bound to a localdlc process, with the test process able to sign requests."""
    from django.core.cache import cache

    from jobs.models import Workspace

    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(localdlc, directory))
    cache.clear()  # instance types are cached per workspace id, and ids repeat between tests
    return Workspace.objects.create(name=name, backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="ws-wizard",
                                    endpoint=localdlc.endpoint, region="cn-hangzhou")


class _FormParser:
    """What a browser would post from <form id="wizard-form">: text inputs, checked boxes and radios, the
    selected (or first) option of each select, textareas. Buttons are left out (nothing was clicked)."""

    def __init__(self, form_id: str) -> None:
        from html.parser import HTMLParser

        self.form_id = form_id
        self.data: dict[str, str] = {}
        self.passwords: dict[str, str] = {}
        outer = self

        class Parser(HTMLParser):
            inside = False
            select: str | None = None
            select_first: str | None = None
            textarea: str | None = None
            option_value: str | None = None

            def handle_starttag(self, tag, attrs):
                a = dict(attrs)
                if tag == "form" and a.get("id") == outer.form_id:
                    self.inside = True
                if not self.inside:
                    return
                name = a.get("name")
                if tag == "input" and name:
                    kind = a.get("type", "text")
                    if kind in ("submit", "button", "image", "reset"):
                        return
                    if kind in ("checkbox", "radio") and "checked" not in a:
                        return
                    outer.data[name] = a.get("value", "on" if kind in ("checkbox", "radio") else "")
                    if kind == "password":
                        outer.passwords[name] = a.get("value", "")
                elif tag == "select" and name:
                    self.select, self.select_first = name, None
                elif tag == "option" and self.select:
                    value = a.get("value", "")
                    if self.select_first is None:
                        self.select_first = value
                        outer.data.setdefault(self.select, value)
                    if "selected" in a:
                        outer.data[self.select] = value
                elif tag == "textarea" and name:
                    self.textarea = name
                    outer.data[name] = ""

            def handle_endtag(self, tag):
                if tag == "form" and self.inside:
                    self.inside = False
                elif tag == "select":
                    self.select = None
                elif tag == "textarea":
                    self.textarea = None

            def handle_data(self, data):
                if self.textarea:
                    # A textarea's first newline belongs to the markup, not to the value.
                    text = outer.data[self.textarea] + data
                    outer.data[self.textarea] = text[1:] if text.startswith("\n") else text

        self.parser = Parser(convert_charrefs=True)

    def feed(self, html: str) -> dict[str, str]:
        self.parser.feed(html)
        return self.data


def page_form_data(html: str, form_id: str = "wizard-form") -> dict[str, str]:
    return _FormParser(form_id).feed(html)


# The boxes outside the six sections: sweep (jobs.wizard._SWEEP_FIELDS, early stopping included) and run after.
_NOT_SECTIONS = ("csrfmiddlewaretoken", "sweep", "sweep_trials", "sweep_seed", "sweep_stop_metric", "sweep_stop_goal",
                 "sweep_stop_after", "sweep_stop_step", "run_after", "run_after_when")


def comparable(data: dict[str, str], skip: set[str] = frozenset()) -> dict[str, str]:
    """Form data as the forms read it: no CSRF token, wizard bookkeeping (`_...`), sweep or run-after box (no
    section's), and a checkbox carried in a hidden input ("True"/"False") the same as a ticked box ("on") or an absent
    one."""
    out = {}
    for key, value in data.items():
        if key.startswith("_") or key in _NOT_SECTIONS or key in skip or value == "False":
            continue
        out[key] = "on" if value == "True" else value
    return out
