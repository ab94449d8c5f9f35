"""URLs: probes, the admin, sign-in, language choice, the JSON API (dedup/api/), the dashboard."""

from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.http import HttpResponse
from django.urls import include, path
from django.views.decorators.cache import cache_control

from webui.health import healthz, readyz
from webui.password_reset import password_reset, password_reset_done
from webui.signin import AdminSignInForm, SignInForm

admin.site.login_form = AdminSignInForm  # the admin's sign-in counts failures too


@cache_control(max_age=86400, public=True)
def favicon(request):
    """No icon, said once a day: the admin's pages name none, so browsers ask /favicon.ico
    (the dashboard's pages name an empty one), and a 404 there fills the log and the console."""
    return HttpResponse(status=204)


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(authentication_form=SignInForm), name="login"),
    # Before Django's own: a reset by mail only where mail is set up, a few per window.
    path("accounts/password_reset/", password_reset, name="password_reset"),
    path("accounts/password_reset/done/", password_reset_done, name="password_reset_done"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("api/", include("dedup.api.urls")),
    path("", include("webui.urls")),
]
