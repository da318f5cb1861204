"""URLs of the team portal (workspaces, members, policy, audit, usage, webhooks, tokens, templates, import/export)
and the JSON API; included from jobs/urls.py."""

from django.urls import path

from jobs import api_jobs, api_sweeps, portal

urlpatterns = [
    path("workspaces", portal.workspace_list, name="workspace_list"),
    path("workspaces/new", portal.workspace_create, name="workspace_create"),
    path("workspaces/<int:ws>/settings", portal.workspace_settings, name="workspace_settings"),
    path("workspaces/<int:ws>/test-connection", portal.test_connection, name="test_connection"),
    path("workspaces/<int:ws>/members", portal.members, name="members"),
    path("workspaces/<int:ws>/members/<int:pk>", portal.member_update, name="member_update"),
    path("workspaces/<int:ws>/policy", portal.policy_edit, name="policy_edit"),
    path("workspaces/<int:ws>/audit", portal.audit_log, name="audit_log"),
    path("workspaces/<int:ws>/usage", portal.usage_report, name="usage_report"),
    path("workspaces/<int:ws>/notifications", portal.notifications, name="notifications"),
    path("workspaces/<int:ws>/notifications/<int:pk>", portal.webhook_edit, name="webhook_edit"),
    path("workspaces/<int:ws>/notifications/<int:pk>/toggle", portal.webhook_toggle, name="webhook_toggle"),
    path("workspaces/<int:ws>/notifications/<int:pk>/delete", portal.webhook_delete, name="webhook_delete"),
    path("workspaces/<int:ws>/notifications/<int:pk>/test", portal.webhook_test, name="webhook_test"),
    path("account/api", portal.api_tokens, name="api_tokens"),
    path("account/api/tokens/<int:pk>/revoke", portal.api_token_revoke, name="api_token_revoke"),
    path("templates", portal.template_list, name="template_list"),
    path("templates/save", portal.template_save, name="template_save"),
    path("templates/from-wizard", portal.template_from_wizard, name="template_from_wizard"),
    path("templates/<int:pk>", portal.template_detail, name="template_detail"),
    path("templates/<int:pk>/locks", portal.template_locks, name="template_locks"),
    path("templates/<int:pk>/default", portal.template_default, name="template_default"),
    path("templates/<int:pk>/delete", portal.template_delete, name="template_delete"),
    path("jobs/import", portal.job_import, name="job_import"),
    path("jobs/<int:pk>/export/<str:fmt>", portal.job_export, name="job_export"),
    path("api/v1/openapi.json", api_jobs.openapi, name="api_openapi"),
    path("api/v1/workspaces", api_jobs.workspaces, name="api_workspaces"),
    path("api/v1/jobs", api_jobs.jobs, name="api_jobs"),
    path("api/v1/jobs/<int:pk>", api_jobs.job, name="api_job"),
    path("api/v1/jobs/<int:pk>/stop", api_jobs.stop, name="api_job_stop"),
    path("api/v1/jobs/<int:pk>/clone", api_jobs.clone, name="api_job_clone"),
    path("api/v1/sweeps", api_sweeps.sweep_list, name="api_sweeps"),
    path("api/v1/sweeps/<int:pk>", api_sweeps.sweep_detail, name="api_sweep"),
    path("api/v1/sweeps/<int:pk>/stop", api_sweeps.sweep_stop, name="api_sweep_stop"),
    path("api/v1/workspaces/<int:pk>/usage", api_sweeps.workspace_usage, name="api_workspace_usage"),
]
