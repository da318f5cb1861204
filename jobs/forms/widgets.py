"""Widgets shared by the section forms."""

from __future__ import annotations

from django import forms


class KeepingSelect(forms.Select):
    """A select that shows a value outside its choices as an extra option instead of silently dropping it
    (a cloned or imported job, or a tampered POST); jobs.spec then reports the value at its field."""

    def optgroups(self, name, value, attrs=None):
        known = {str(choice) for choice, _label in self.choices}
        extra = [v for v in value if v not in known and v not in ("", None)]
        if extra:
            self.choices = [*self.choices, *((v, v) for v in extra)]
        return super().optgroups(name, value, attrs)


def choices(mapping: dict[str, str], blank: str | None = None) -> list[tuple[str, str]]:
    items = [(str(value), label) for value, label in mapping.items()]
    return [("", blank), *items] if blank is not None else items
