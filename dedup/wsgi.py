"""WSGI entry point (gunicorn dedup.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dedup.settings")
application = get_wsgi_application()
