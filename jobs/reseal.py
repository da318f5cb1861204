"""Takes out of stored rows the values that spec.looks_like_secret names but an older, narrower rule left in plain
text (HFTOKEN, DB_PASS, SSH_KEY...): migration 0034 runs it over every job, schedule, template version and sweep.

Each row is treated as the code treats a new one today, with the code's own helpers, so what the migration
leaves is what a submit, an import or a template save would have stored:
- a job that will still be sent (no DLC id, Submitting or Waiting) and a schedule (its future runs) need the
  values: api_jobs.take_secrets takes them out, and they are sealed into the row's sealed_secrets next to those
  already there, which win (wire_body puts a sealed value over the body's);
- any other job (sent, imported, failed, cancelled) never sends its body again: spec.strip_secrets puts the
  placeholder, and the values' log-mask fingerprints (lifecycle.import_secrets, what the submit and the import
  fingerprint) are merged into secret_marks so its logs stay masked;
- a template version keeps no secret at all (templates are shared): templates_lib.strip_secrets empties the
  value and ticks Secret, so a job from it asks for the value;
- a sweep's parameter named like a secret (refused since: sweeps.name_problem) keeps its name and the placeholder
  for each value, in the sweep and its trials: its trials' jobs are the jobs above, and a clone of the sweep
  refuses the name anyway.
Each function returns None when the row holds no such value: running it again changes nothing.
"""

from __future__ import annotations

from typing import Any

from jobs import logmask, secretbox, spec
from jobs import status as st

# A job in one of these, not yet bound to a DLC job, is still to be sent with its secrets (jobs.lifecycle.submit).
_TO_SEND = frozenset({st.SUBMITTING, st.WAITING})


class KeyMismatch(RuntimeError):
    """A row's sealed secrets do not open with this key: resealing would lose them, so nothing is written."""


def _opened(sealed: str, what: str) -> dict[str, Any]:
    secrets = secretbox.unseal(sealed)
    if sealed and not secrets:
        raise KeyMismatch(f"{what}: its sealed secrets do not open with DLC_SECRET_BOX_KEY (or the data dir's key); "
                          "run the migration with the key the console uses.")
    return secrets


def job_row(body: Any, sealed: str, marks: Any, *, status: str, dlc_job_id: str,
            what: str = "job") -> tuple[dict, str, dict] | None:
    """(body, sealed_secrets, secret_marks) of a job with no plain secret-named value left, or None if it has none."""
    from jobs.api_jobs import take_secrets
    from jobs.lifecycle import import_secrets

    if not isinstance(body, dict):
        return None
    if not dlc_job_id and status in _TO_SEND:
        clean, found = take_secrets(body)
        if clean == body:
            return None
        return clean, secretbox.seal({**found, **_opened(sealed, what)}), marks or {}
    clean = spec.strip_secrets(body)
    if clean == body:
        return None
    return clean, sealed, logmask.merged(marks or {}, logmask.marks_for(import_secrets(body)))


def schedule_row(body: Any, sealed: str, *, what: str = "schedule") -> tuple[dict, str] | None:
    """(body, sealed_secrets) of a schedule with its plain secret-named values sealed, or None if it has none."""
    from jobs.api_jobs import take_secrets

    if not isinstance(body, dict):
        return None
    clean, found = take_secrets(body)
    if clean == body:
        return None
    return clean, secretbox.seal({**found, **_opened(sealed, what)})


def _plain_secret(sections: dict) -> bool:
    env = sections.get("environment")
    if not isinstance(env, dict):
        return False
    rows = env.get("envs") if isinstance(env.get("envs"), list) else []
    return bool(env.get("registry_password")) or any(
        isinstance(row, dict) and row.get("value") not in (None, "")
        and (row.get("secret") is True or spec.looks_like_secret(row.get("key"))) for row in rows)


def template_sections(sections: Any) -> dict | None:
    """A template version's sections with every secret-named variable's value emptied and ticked Secret (as
    templates_lib.save stores them today), or None if there is none to empty. Only then is the version rewritten:
    strip_secrets would also add keys to a clean one."""
    from jobs import templates_lib

    if not isinstance(sections, dict) or not _plain_secret(sections):
        return None
    return templates_lib.strip_secrets(sections)


def _hidden(value: Any) -> Any:
    return spec.SECRET_PLACEHOLDER if value not in (None, "") else value


def sweep_row(parameters: Any, specs: Any) -> tuple[list, list] | None:
    """(parameters, specs) of a sweep with the placeholder for each value of a parameter named like a secret, or
    None if it has none in plain."""
    def clean(items: Any, hide) -> list:
        return [[item[0], hide(item[1])] if isinstance(item, list) and len(item) == 2
                and spec.looks_like_secret(item[0]) else item for item in items] if isinstance(items, list) else items

    new_parameters = clean(parameters, lambda values: [_hidden(v) for v in values] if isinstance(values, list)
                           else _hidden(values))
    new_specs = clean(specs, _hidden)
    if new_parameters == parameters and new_specs == specs:
        return None
    return new_parameters, new_specs


def trial_values(values: Any) -> dict | None:
    """A sweep trial's {name: value} with the placeholder for a value named like a secret, or None if none is."""
    if not isinstance(values, dict):
        return None
    clean = {k: _hidden(v) if spec.looks_like_secret(k) else v for k, v in values.items()}
    return clean if clean != values else None
