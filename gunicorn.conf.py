"""gunicorn's settings for dedup's web process (gunicorn reads this file from the working
directory: `gunicorn dedup.wsgi`, as the Dockerfile and docker-compose.yml run it)."""

import os


def post_worker_init(worker) -> None:
    """Warm each worker (webui.warm) after it has loaded Django, before it serves a request."""
    from webui.warm import warm

    warm()


# Each worker is replaced after this many requests (a little more or less, so that they are not
# all replaced at once): the memory a worker's caches and Python's allocator keep grows with
# what it served, and a fresh worker gives it back.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "2000"))
max_requests_jitter = max_requests // 10
