"""The VPC section's help (jobs.forms.vpc): it says what jobs.spec requires, for the choices made."""

from __future__ import annotations

from jobs.forms import wizard as glue
from localdlc.catalog import ECS_SPECS
from tests.support.wizard import form_data

CATALOG = glue.Catalog([dict(s) for s in ECS_SPECS])


def vpc_help(wizard: glue.Wizard) -> dict[str, str]:
    view = next(v for v in wizard.views() if v.name == "vpc")
    return {name: str(fv.bf.help_text) for name, fv in view.f.items()}


def test_the_vswitch_and_vpc_help_say_lingjun_preemptible_resources_require_them():
    """Audit: the vSwitch help said "Optional" while the rules require one for Lingjun spot jobs."""
    general = vpc_help(glue.Wizard(form_data("spot"), catalog=CATALOG))
    assert "Optional" not in general["switch_id"]
    assert general["switch_id"] == ("Empty lets the system pick one by inventory. Lingjun preemptible resources "
                                    "require one.")
    assert general["vpc_id"].endswith("Lingjun preemptible resources require one.")
    assert general["security_group_id"] == "Required with a VPC."
    lingjun = glue.Wizard(form_data("spot", resources__resource_type="lingjun"), catalog=CATALOG)
    shown = vpc_help(lingjun)
    assert shown["switch_id"] == "Required for Lingjun preemptible resources."
    assert shown["vpc_id"] == "Required for Lingjun preemptible resources, with a vSwitch and a security group."
    # The help and the rule agree: empty, the vSwitch is refused there.
    assert lingjun.errors()["vpc.switch_id"] == ["Lingjun preemptible resources require a vSwitch."]
    # Lingjun on public resources needs none, and its help does not say it does.
    public = glue.Wizard(form_data("public", resources__resource_type="lingjun"), catalog=CATALOG)
    assert vpc_help(public)["switch_id"] == general["switch_id"]
    assert "vpc.switch_id" not in public.errors()
