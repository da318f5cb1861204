from django.urls import path

from jobs import views

urlpatterns = [
    path("", views.job_list, name="job_list"),
    path("jobs/new", views.job_create, name="job_create"),
    path("jobs/<int:pk>", views.job_detail, name="job_detail"),
    path("jobs/<int:pk>/row", views.job_row, name="job_row"),
    path("jobs/<int:pk>/stop", views.job_stop, name="job_stop"),
    path("jobs/<int:pk>/pods/<str:pod_id>/logs", views.pod_logs, name="pod_logs"),
    path("workspace", views.switch_workspace, name="switch_workspace"),
]
