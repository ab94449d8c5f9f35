"""Django admin: the settings an admin tunes, and read-mostly views of what the service keeps.

Rows the service makes (fingerprints, matches, uploads, decisions, rebuilds) are read-only here:
they change through the services, never by hand. Segment rows and passage keys are not shown
(millions of rows, nothing to read in them); `manage.py index_health` sums them up.

By what they show: `settings` (the settings and rebuilds), `articles` (articles, fingerprints,
matches, decisions and uploads), `api` (tokens, webhooks and their deliveries) and `users`
(users and groups, and the audit log of every change made here and elsewhere).
"""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from dedup.admin import api, articles, settings, users

__all__ = ["api", "articles", "settings", "users"]

admin.site.site_header = "dedup"
admin.site.site_title = "dedup"
admin.site.index_title = _("administration")
