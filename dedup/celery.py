"""The Celery app: settings come from Django's, under the CELERY_ prefix."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dedup.settings")

app = Celery("dedup")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dedup"])
