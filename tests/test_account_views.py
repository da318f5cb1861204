"""The user's email settings page (jobs.account_views): the test mail's rate limit and who sees the mail directory.
What the mails say and when they go: tests/test_notify_email.py."""

from __future__ import annotations

import pytest
from django.core import mail

from jobs import account_views
from tests import portal_fixtures as pf

PAGE = "/account/notifications"
TEST_URL = "/account/notifications/test"


@pytest.fixture(name="team")
def fixture_team(db):
    from django.core.cache import cache

    cache.clear()  # the rate limit's counters, kept by user pk (reused between tests)
    yield pf.make_team()
    cache.clear()


def with_address(user, email: str = "me@example.com"):
    user.email = email
    user.save(update_fields=["email"])
    return pf.client_for(user)


def test_test_mails_are_limited_per_user(team):
    """QA: four test mails in a second. Presses that cannot send are not counted; another user has their own."""
    member, admin = team.users["member"], team.users["admin"]
    client = pf.client_for(member)
    for _ in range(account_views.TEST_MAILS_PER_WINDOW + 2):
        assert "Save your email address first" in client.post(TEST_URL, HTTP_HX_REQUEST="true").content.decode()
    client = with_address(member)
    answers = [client.post(TEST_URL, HTTP_HX_REQUEST="true").content.decode()
               for _ in range(account_views.TEST_MAILS_PER_WINDOW + 1)]
    assert all('data-ok="true"' in answer for answer in answers[:-1])
    assert 'data-ok="false"' in answers[-1] and "Too many test emails. Try again in 10 minutes." in answers[-1]
    assert len(mail.outbox) == account_views.TEST_MAILS_PER_WINDOW

    # Without htmx, the refusal is the message of the page the POST returns to.
    page = client.post(TEST_URL, follow=True).content.decode()
    assert "Too many test emails" in page and len(mail.outbox) == account_views.TEST_MAILS_PER_WINDOW
    assert 'data-ok="true"' in with_address(admin, "admin@example.com").post(
        TEST_URL, HTTP_HX_REQUEST="true").content.decode()
    assert mail.outbox[-1].to == ["admin@example.com"]


def test_the_test_mail_goes_only_to_the_saved_address(team):
    client = with_address(team.users["member"], "saved@example.com")
    client.post(TEST_URL, {"email": "someone-else@example.com", "to": "someone-else@example.com"},
                HTTP_HX_REQUEST="true")
    assert [m.to for m in mail.outbox] == [["saved@example.com"]]


def test_only_staff_see_the_mail_directory(team, settings, tmp_path):
    """QA: every user was shown the server's path of the mail directory."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail-dir")
    member = team.users["member"]
    text = " ".join(pf.client_for(member).get(PAGE).content.decode().split())
    assert "mail-dir" not in text and "as a file on the server" in text
    member.is_staff = True
    member.save(update_fields=["is_staff"])
    assert settings.EMAIL_FILE_PATH in pf.client_for(member).get(PAGE).content.decode()


def test_a_changed_address_is_audited_without_the_address(team):
    """QA: "email: → demo@example.com" landed in each workspace's audit log, a personal address its admins saw.
    The workspaces are told only that the address was set, changed or removed."""
    import json

    from jobs.models import AuditEvent

    client = with_address(team.users["member"], "old@example.com")
    for data, said in [({"email": "new@example.com", "email_on_failure": "on"}, {"from": "set", "to": "changed"}),
                       ({"email": ""}, {"from": "set", "to": "none"})]:  # no address: no opt-ins either
        assert client.post(PAGE, data).status_code == 302
        event = AuditEvent.objects.filter(details__event="email-notifications-changed").first()
        assert event.details["changes"]["email"] == said
    details = json.dumps([e.details for e in AuditEvent.objects.filter(details__event="email-notifications-changed")])
    assert "@example.com" not in details
    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/audit").content.decode()
    assert "email-notifications-changed" in page and "old@example.com" not in page and "new@example.com" not in page
