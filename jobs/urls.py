from django.urls import include, path
from django.views.generic import RedirectView

from jobs import api, note_views, sweep_views, views, wizard

urlpatterns = [
    path("", views.job_list, name="job_list"),
    # The list lives at /; /jobs and /jobs/ are where people (and old links) look for it.
    path("jobs", RedirectView.as_view(pattern_name="job_list", permanent=True, query_string=True)),
    path("jobs/", RedirectView.as_view(pattern_name="job_list", permanent=True, query_string=True)),
    path("jobs/new", wizard.job_new, name="job_create"),
    path("jobs/new/form", wizard.job_new_form, name="job_create_form"),  # where the wizard posts (not its own URL)
    path("jobs/new/section/<str:name>", wizard.wizard_section, name="wizard_section"),
    path("jobs/new/preview", wizard.wizard_preview, name="wizard_preview"),
    path("api/v1/jobs/validate", api.validate_job, name="api_validate"),
    path("jobs/<int:pk>", views.job_detail, name="job_detail"),
    path("jobs/<int:pk>/row", views.job_row, name="job_row"),
    path("jobs/<int:pk>/stop", views.job_stop, name="job_stop"),
    path("jobs/<int:pk>/priority", views.job_priority, name="job_priority"),
    path("jobs/<int:pk>/pods/<str:pod_id>/logs", views.pod_logs, name="pod_logs"),
    path("jobs/rows", views.job_rows, name="job_rows"),
    path("jobs/counts", views.job_counts, name="job_counts"),
    path("jobs/stop", views.jobs_stop, name="jobs_stop"),
    path("jobs/compare", views.job_compare, name="job_compare"),
    path("jobs/<int:pk>/events", views.job_events, name="job_events"),
    path("jobs/<int:pk>/metrics", views.job_metrics, name="job_metrics"),
    path("jobs/<int:pk>/scalars", views.job_scalars, name="job_scalars"),
    path("jobs/<int:pk>/logs", views.job_logs, name="job_logs"),
    path("jobs/<int:pk>/pods/<str:pod_id>/logs/download", views.pod_log_download, name="pod_log_download"),
    # Notes on a job (jobs.notes): the job page's card, and the API's.
    path("jobs/<int:pk>/notes", note_views.job_notes, name="job_notes"),
    path("jobs/<int:pk>/notes/<int:note_id>", note_views.job_note_edit, name="job_note_edit"),
    path("jobs/<int:pk>/notes/<int:note_id>/delete", note_views.job_note_delete, name="job_note_delete"),
    path("api/v1/jobs/<int:pk>/notes", note_views.api_job_notes, name="api_job_notes"),
    path("workspace", views.switch_workspace, name="switch_workspace"),
    path("sweeps/", sweep_views.sweep_list, name="sweep_list"),
    path("sweeps/<int:pk>", sweep_views.sweep_detail, name="sweep_detail"),
    path("sweeps/<int:pk>/stop", sweep_views.sweep_stop, name="sweep_stop"),
    # The team portal and the JSON API (jobs/portal_urls.py).
    path("", include("jobs.portal_urls")),
]
