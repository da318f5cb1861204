"""Widgets shared by the section forms."""

from __future__ import annotations

import math
from typing import Any

from django import forms

from jobs.spec.base import _too_large


class _Keeping:
    """Shows a value outside the choices as an extra option instead of silently dropping it (a cloned or imported
    job, a choice the current selection no longer offers, or a tampered POST); jobs.spec then reports the value at
    its field. `labels`: the words of values that are known but not offered here (else the value itself)."""

    def __init__(self, *args, labels: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.labels = labels or {}

    def optgroups(self, name, value, attrs=None):
        extra = [v for v in value if not_offered(self, v)]
        if extra:
            self.choices = [*self.choices, *((v, self.labels.get(v, v)) for v in extra)]
        return super().optgroups(name, value, attrs)


def not_offered(widget: forms.Widget, value: Any) -> bool:
    """Whether a keeping widget (_Keeping) shows this value only because it keeps it: set, and not among the
    choices the current selection offers."""
    return (isinstance(widget, _Keeping) and value not in ("", None)
            and str(value) not in {str(choice) for choice, _label in widget.choices})


class KeepingSelect(_Keeping, forms.Select):
    """A select that keeps a value outside its choices (_Keeping)."""


class KeepingRadioSelect(_Keeping, forms.RadioSelect):
    """Radio buttons that keep a value outside their choices (_Keeping)."""


def choices(mapping: dict[str, str], blank: str | None = None) -> list[tuple[str, str]]:
    items = [(str(value), label) for value, label in mapping.items()]
    return [("", blank), *items] if blank is not None else items


class NumberField(forms.FloatField):
    """A FloatField that leaves a correctly written number too large for a float ("1e400", 400 digits) to jobs.spec,
    whose message says it is too large and gives the bound (spec-notes D27), where Django says "Enter a number."."""

    def to_python(self, value: Any) -> float | str | None:
        number = super().to_python(value)
        if number == math.inf and _too_large(str(value), whole=False):
            return str(value).strip()  # jobs.spec reads the text and reports it as too large
        return number

    def validate(self, value: Any) -> None:
        if not isinstance(value, str):
            super().validate(value)
