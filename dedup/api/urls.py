"""Addresses of the JSON API, mounted at /api/: ninja's, with 405s and unknown addresses
answered in the API's JSON shape."""

from django.urls import URLPattern, re_path

from dedup.api import api
from dedup.api.core import json_not_allowed, not_found

_patterns, _app, namespace = api.urls
app_name = "api"
urlpatterns = [
    # ninja's root (its name gives ninja the API's prefix) answers like any unknown address.
    URLPattern(p.pattern, not_found, name=p.name) if p.name == "api-root" else json_not_allowed(p)
    for p in _patterns
] + [re_path(r"^(?P<path>.*)$", not_found)]
