"""Addresses of the dashboard, mounted at the site root: review pages, upload, overview."""

from django.urls import include, path

from webui import views

app_name = "webui"
urlpatterns = [
    path("upload/", views.upload_page, name="upload_page"),
    path("upload/<int:upload_id>/status.json", views.upload_status, name="upload_status"),
    path("overview/", views.overview, name="overview"),
    path("", include("webui.review_urls")),
]
