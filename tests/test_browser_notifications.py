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
    expect(events).to_have_count(7)  # the five job ends, Idle and Budget
    expect(page.locator("#webhook-form input[name=sweeps][value=sweep]")).to_be_checked()  # one event per sweep
    for box in events.all():  # a new webhook starts with every job event ticked (Budget is asked for); none refused
        if box.get_attribute("value") == "Budget":
            expect(box).not_to_be_checked()
            continue
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

    # On a phone the answer wraps as one box (QA: an inline box, its border broke into pieces at each line end).
    page.set_viewport_size({"width": 390, "height": 800})
    # The first answer is still there until the second replaces it: marked, so the wait is for the new one.
    card.locator("[data-ok=true]").evaluate("e => e.dataset.old = '1'")
    card.locator("button", has_text="Send test").click()
    answer = card.locator("[data-ok=true]:not([data-old])", has_text="HTTP 200")
    answer.wait_for()
    assert answer.evaluate("e => e.getClientRects().length") == 1
    assert answer.evaluate("e => e.getBoundingClientRect().height") > 30, "wrapped: the case this checks"

    # Edit lands on its form, far below on a phone (QA: 2,737 px down at 390), its first field focused.
    card.locator("a.webhook-edit").click()
    expect(page.locator("#webhook-form h2")).to_have_text("Edit team-chat")
    expect(page.locator("#id_name")).to_be_focused()
    expect(page.locator("#id_name")).to_be_in_viewport()
    expect(page.locator("#webhook-form h2")).to_be_in_viewport(ratio=1)


def test_a_member_opts_in_to_email_and_sends_a_test_in_place(stack, member, workspace, page):
    """From the top bar's Email link: a bad address is refused at its field, a good one saved with a box ticked,
    and the test mail, written by the stack's file backend (no EMAIL_HOST), is answered in place."""
    from jobs.notify_models import NotificationPrefs

    sign_in(page, stack.url, member.username, PASSWORD)
    page.click("header nav >> text=Email")
    # The server's mail directory is for staff's eyes only (QA).
    page.locator("#email-files", has_text="as a file on the server").wait_for()
    assert str(stack.data_dir) not in page.content()
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


def test_a_paused_webhook_says_why_and_enabling_it_resumes_and_a_metadata_url_is_refused(stack, member, workspace,
                                                                                         page, tmp_path):
    from django.utils import timezone

    from jobs.models import Membership, Webhook

    Membership.objects.filter(user=member, workspace=workspace).update(role=Membership.ADMIN)
    reason = "Paused after 20 deliveries in a row failed; enable it again once the receiver is fixed."
    webhook = Webhook(workspace=workspace, name="gone", events=["Failed"], enabled=False, failures_in_a_row=20,
                      paused_at=timezone.now(), paused_reason=reason)
    webhook.set_url("https://hooks.example.com/dlc")
    webhook.save()
    sign_in(page, stack.url, member.username, PASSWORD)
    card = page.locator(f"#webhook-{webhook.pk}")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{stack.url}/workspaces/{workspace.pk}/notifications")
        expect(card.locator(".badge", has_text="paused")).to_be_visible()
        expect(card.locator(".webhook-paused")).to_contain_text(reason)
        box = card.locator(".webhook-paused").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, "the reason fits the page"
        page.screenshot(path=str(tmp_path / f"paused-{width}.png"), full_page=True)
    card.locator("button", has_text="Enable").click()
    expect(card.locator(".badge", has_text="enabled")).to_be_visible()
    expect(card.locator(".webhook-paused")).to_have_count(0)
    webhook.refresh_from_db()
    assert webhook.enabled and webhook.failures_in_a_row == 0

    page.fill("#id_name", "metadata")
    page.fill("#id_url", "http://169.254.169.254/latest/meta-data/")
    page.click("#webhook-form button[type=submit]")
    page.locator("#field-url .error", has_text="link-local").wait_for()
    assert not Webhook.objects.filter(name="metadata").exists()


def test_the_sign_out_address_opened_directly_shows_a_sign_out_button(stack, member, page):
    """QA: GET /accounts/logout/ was an empty 405, a blank error page in Chromium."""
    sign_in(page, stack.url, member.username, PASSWORD)
    page.goto(f"{stack.url}/accounts/logout/")
    page.locator("#sign-out-form button", has_text="Sign out").click()
    page.wait_for_url("**/accounts/login/")
    page.goto(f"{stack.url}/accounts/logout/")
    page.wait_for_url("**/accounts/login/")
