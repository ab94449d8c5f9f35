"""URLs: the admin, sign-in, language choice, the JSON API (dedup/api/) and the dashboard."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("api/", include("dedup.api.urls")),
    path("", include("webui.urls")),
]
