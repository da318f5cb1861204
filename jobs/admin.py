"""Django admin for operators. The audit log is read-only here as everywhere; secrets are never shown."""

from django.contrib import admin

from jobs.models import (
    ApiToken,
    AuditEvent,
    Job,
    JobTemplate,
    JobTemplateVersion,
    Membership,
    Workspace,
    WorkspacePolicy,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "backend", "region", "dlc_workspace_id", "credential_profile"]
    search_fields = ["name"]
    inlines = [MembershipInline]

    def get_form(self, request, obj=None, change=False, **kwargs):
        # Imported here (as audit below): they import the SDK, which must not load at startup, before the
        # environment it reads once is set (tests/conftest.py).
        from jobs.portal_forms import WorkspaceAdminForm

        self.form = WorkspaceAdminForm  # one console workspace per DLC workspace, as in the portal
        return super().get_form(request, obj, change, **kwargs)

    def save_model(self, request, obj, form, change) -> None:
        from jobs import audit
        from jobs.portal_forms import BINDING_FIELDS

        super().save_model(request, obj, form, change)
        # The binding decides which jobs a workspace's members read: changed here, it is audited as in the portal.
        if not change:
            audit.record(request.user, AuditEvent.CHANGED, workspace=obj, via="admin", event="workspace-created",
                         settings={name: getattr(obj, name) for name in ("name", "backend", *BINDING_FIELDS)})
        elif changed := audit.changes({name: form.initial.get(name) for name in form.fields},
                                      {name: getattr(obj, name) for name in form.fields}):
            audit.record(request.user, AuditEvent.CHANGED, workspace=obj, via="admin", event="settings",
                         changes=changed)


@admin.register(WorkspacePolicy)
class WorkspacePolicyAdmin(admin.ModelAdmin):
    list_display = ["workspace", "max_nodes", "max_gpus", "max_duration_minutes", "updated_at"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["display_name", "workspace", "owner", "status", "dlc_job_id", "created_at"]
    list_filter = ["workspace", "status"]
    search_fields = ["display_name", "dlc_job_id"]
    exclude = ["sealed_secrets"]  # encrypted, but still nobody's business
    # A job's creation time is copied into its tag rows, whose index the list pages by (jobs.models.JobTag).
    readonly_fields = ["idempotency_tag", "created_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the audit log is append-only."""

    list_display = ["created_at", "actor_name", "action", "workspace", "job_name"]
    list_filter = ["action", "workspace"]
    search_fields = ["actor_name", "job_name"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "workspace", "read_only", "created_at", "expires_at", "last_used_at",
                    "revoked_at"]
    exclude = ["token_hash"]
    # The scope too: an edit here must not widen a token its owner chose to narrow.
    readonly_fields = ["user", "name", "prefix", "workspace", "read_only", "created_at", "expires_at", "last_used_at"]

    def has_add_permission(self, request) -> bool:
        return False  # tokens are created by their owner, who alone sees the plaintext once


class JobTemplateVersionInline(admin.TabularInline):
    model = JobTemplateVersion
    extra = 0
    readonly_fields = ["number", "note", "created_by", "created_at"]
    exclude = ["sections"]
    can_delete = False


@admin.register(JobTemplate)
class JobTemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "workspace", "default_version", "created_at"]
    inlines = [JobTemplateVersionInline]
