"""The signed-in user's own settings beside API tokens: email notifications of their jobs' ends (jobs.notify_email)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from jobs import notify_email, ratelimit
from jobs.models import Membership
from jobs.notify import Answer
from jobs.notify_models import NotificationPrefs


class EmailPrefsForm(forms.ModelForm):
    # A text input (styled like the others), validated as an address by the field.
    email = forms.EmailField(label="Your email address", required=False, max_length=254,
                             help_text="Where the mails go. Leave empty to get none.",
                             widget=forms.TextInput(attrs={"autocomplete": "email", "inputmode": "email"}))

    class Meta:
        model = NotificationPrefs
        fields = list(notify_email.PREF_FIELDS)
        # Read after the fieldset's legend, "Email me when my job…".
        labels = {"email_on_failure": "fails, or DLC refuses to run it", "email_on_success": "succeeds",
                  "email_on_stop": "is stopped", "email_on_idle": "is idle"}
        help_texts = {
            "email_on_failure": "With the last lines of its log when the console has them.",
            "email_on_stop": "By someone else or by DLC; not when you stopped it yourself.",
            "email_on_idle": "Still running but using almost none of its CPUs or GPUs, as the workspace's idle "
                             "policy measures it; once each time it goes idle.",
            "email_on_budget": "Once per threshold, month and budget amount, as the usage page counts the spend.",
        }

    def __init__(self, *args, user, enabled: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["email"].initial = user.email
        if not Membership.objects.filter(user=user, role=Membership.ADMIN).exists():
            del self.fields[notify_email.BUDGET_PREF]  # budget alerts go to workspace admins only
        if not enabled:
            # Email is off on this console: nothing may be ticked that would never be sent.
            for name in notify_email.PREF_FIELDS:
                if name in self.fields:
                    self.fields[name].disabled = True

    def clean(self) -> dict:
        data = super().clean()
        if any(data.get(name) for name in notify_email.PREF_FIELDS) and not data.get("email") \
                and "email" not in self.errors:
            self.add_error("email", "Enter the address to send to, or untick the boxes.")
        return data


@login_required
@require_http_methods(["GET", "POST"])
def email_notifications(request: HttpRequest) -> HttpResponse:
    """The user's address and which of their jobs' ends are mailed to them (Post/Redirect/Get)."""
    prefs = notify_email.prefs_for(request.user)
    form = EmailPrefsForm(request.POST if request.method == "POST" else None, instance=prefs, user=request.user,
                          enabled=notify_email.configured())
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        changed = notify_email.save_prefs(request.user, data["email"], data)
        messages.success(request, "Email notifications saved." if changed else "Nothing changed.")
        return redirect("email_notifications")
    # The server's mail directory is a path on the host: staff only, others are told mail is written as files.
    staff = request.user.is_staff or request.user.is_superuser
    return render(request, "portal/email_notifications.html", {
        "form": form, "mode": notify_email.mode(),
        "mail_dir": getattr(settings, "EMAIL_FILE_PATH", "") if staff else "", "saved_email": request.user.email,
    })


TEST_MAILS_PER_WINDOW = 5
TEST_MAIL_WINDOW_SECONDS = 600


def _limited(user) -> Answer | None:
    """The refusal when this user sent too many test mails lately; None when another may go. Presses that cannot
    send (no address saved, email off) are not counted."""
    if not (user.email and notify_email.configured()):
        return None
    wait = ratelimit.take(f"email-test:{user.pk}", TEST_MAILS_PER_WINDOW, TEST_MAIL_WINDOW_SECONDS)
    if not wait:
        return None
    return Answer(False, None, f"Too many test emails. Try again in {ratelimit.describe(wait)}.")


@login_required
@require_POST
def email_test(request: HttpRequest) -> HttpResponse:
    """Send a test mail to the user's saved address now; the answer in place (waits up to EMAIL_TIMEOUT).

    Only ever to the address saved on this page (never one sent with the request), and at most TEST_MAILS_PER_WINDOW
    per user in TEST_MAIL_WINDOW_SECONDS: each press is a real mail to whatever address was saved."""
    answer = _limited(request.user) or notify_email.send_test(request.user)
    if request.htmx:
        return render(request, "portal/_email_test.html", {"answer": answer, "to": request.user.email})
    if answer.ok:
        messages.success(request, f"Test email sent to {request.user.email}.")
    else:
        messages.error(request, f"Test email not sent: {answer.error}")
    return redirect("email_notifications")
