"""The resources section's choices (jobs.forms.resources): the wizard offers only the bids jobs.spec takes."""

from __future__ import annotations

import re

from jobs.forms import wizard as glue
from localdlc.catalog import ECS_SPECS
from tests.support.wizard import form_data

CATALOG = glue.Catalog([dict(s) for s in ECS_SPECS])
LINGJUN_SPOT = {"resources__resource_type": "lingjun", "vpc__vpc_id": "vpc-abc", "vpc__switch_id": "vsw-abc",
                "vpc__security_group_id": "sg-abc", "resources__roles__0__instance_type": "ml.gu7i.c16m60.1-gu30"}


def bid_options(wizard: glue.Wizard) -> dict[str, bool]:
    """The bid methods the page offers: {value: checked}."""
    html = str(next(v for v in wizard.views() if v.name == "resources").f["bid_method"].bf)
    return {m[2]: "checked" in m[1] for m in re.finditer(r'<input([^>]*value="([a-z]+)"[^>]*)>', html)}


def test_general_preemptible_resources_offer_both_bids():
    wizard = glue.Wizard(form_data("spot"), catalog=CATALOG)
    assert bid_options(wizard) == {"discount": True, "price": False}


def test_lingjun_preemptible_resources_offer_only_the_bid_by_discount():
    """Audit: "By price" was offered on Lingjun spot, which the server always refuses."""
    wizard = glue.Wizard(form_data("spot", **LINGJUN_SPOT), catalog=CATALOG)
    assert bid_options(wizard) == {"discount": True}
    assert wizard.errors() == {}
    blank = glue.Wizard(form_data("spot", **LINGJUN_SPOT, resources__bid_method=""), catalog=CATALOG)
    assert bid_options(blank) == {"discount": False}


def test_a_bid_by_price_chosen_before_switching_to_lingjun_stays_shown_with_the_rule_at_it():
    # Without JavaScript (or a clone) the page may post "price" for Lingjun: it is not silently dropped, and the
    # server's message (the safety net) is at the field that shows it.
    wizard = glue.Wizard(form_data("spot", **LINGJUN_SPOT, resources__bid_method="price", resources__spot_price="1"),
                         catalog=CATALOG)
    assert bid_options(wizard) == {"discount": False, "price": True}
    html = str(next(v for v in wizard.views() if v.name == "resources").f["bid_method"].bf)
    assert "By price" in html
    said = wizard.errors()["resources.bid_method"]
    assert said == ["Lingjun preemptible resources only support bidding by discount."]
