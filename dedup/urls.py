"""URLs: the admin, sign-in, the JSON API (dedup/api.py) and, later, the dashboard."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("dedup.api_urls")),
]
