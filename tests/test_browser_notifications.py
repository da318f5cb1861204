"""A workspace admin adds a webhook on the Notifications tab and sends a test: the answer shows in place (htmx),
and the receiver, a real HTTP server in the test, got one signed POST. Chromium against the real stack."""

import hashlib
import hmac
import json

import pytest
from playwright.sync_api import expect

from tests.conftest import PASSWORD
from tests.support.browser import sign_in
from tests.test_notify import fixture_receiver  # noqa: F401 - registers the fixture by name

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_add_a_webhook_and_send_a_test_in_place(stack, member, workspace, receiver, page):
    from jobs.models import Membership, Webhook

    Membership.objects.filter(user=member, workspace=workspace).update(role=Membership.ADMIN)
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/workspaces/{workspace.pk}/settings")
    page.click(".subtabs >> text=Notifications")
    page.fill("#id_url", "ftp://example.com/hook")
    page.fill("#id_name", "team-chat")
    events = page.locator("#webhook-form input[name=events]")
    expect(events).to_have_count(4)
    for box in events.all():  # a new webhook starts with every job end ticked; none is refused
        expect(box).to_be_checked()
        box.uncheck()
    page.click("#webhook-form button[type=submit]")
    page.locator("#field-url .error", has_text="Only http").wait_for()
    page.locator("#field-events .error", has_text="at least one").wait_for()

    page.fill("#id_url", receiver.url("/hook"))
    page.check("#id_events_1")  # Failed
    page.fill("#id_secret", "browser-secret")
    page.click("#webhook-form button[type=submit]")
    webhook = Webhook.objects.get(workspace=workspace, name="team-chat")
    card = page.locator(f"#webhook-{webhook.pk}")
    card.wait_for()
    assert "browser-secret" not in page.content()

    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    card.locator("button", has_text="Send test").click()
    card.locator("[data-ok=true]", has_text="HTTP 200").wait_for()
    assert navigations == [], "the answer must show in place, without reloading"
    [(headers, body)] = receiver.posts("/hook")
    assert json.loads(body)["event"] == "test"
    assert headers["X-DLC-Signature"] == "sha256=" + hmac.new(b"browser-secret", body, hashlib.sha256).hexdigest()


def test_a_member_opts_in_to_email_and_sends_a_test_in_place(stack, member, workspace, page):
    """From the top bar's Email link: a bad address is refused at its field, a good one saved with a box ticked,
    and the test mail, written by the stack's file backend (no EMAIL_HOST), is answered in place."""
    from jobs.notify_models import NotificationPrefs

    sign_in(page, stack.url, member.username, PASSWORD)
    page.click("header nav >> text=Email")
    page.locator("#email-files", has_text=str(stack.data_dir / "mail")).wait_for()
    expect(page.locator("#email-prefs input[type=checkbox]:checked")).to_have_count(0)  # opt-in
    page.fill("#id_email", "alice@@example")
    page.check("#id_email_on_failure")
    page.click("#email-prefs button[type=submit]")
    page.locator("#field-email .error", has_text="valid email address").wait_for()
    page.fill("#id_email", "alice@example.com")
    page.click("#email-prefs button[type=submit]")
    page.locator(".messages", has_text="Email notifications saved").wait_for()
    assert NotificationPrefs.objects.get(user=member).email_on_failure

    navigations = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    page.click("#email-test button")
    page.locator("#email-test-result [data-ok=true]", has_text="alice@example.com").wait_for()
    assert navigations == [], "the answer must show in place, without reloading"
    assert any("[DLC Console] Test email" in p.read_text() for p in (stack.data_dir / "mail").glob("*.log"))
