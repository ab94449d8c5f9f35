"""The dedup Django app."""

from django.apps import AppConfig


class DedupConfig(AppConfig):
    name = "dedup"
    verbose_name = "dedup"

    def ready(self) -> None:
        # The Celery app must exist before any task is sent; importing it here keeps it out of
        # `import dedup` (the engine is used without Django or Celery).
        from dedup import celery  # noqa: F401
