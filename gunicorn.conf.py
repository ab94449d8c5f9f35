"""gunicorn's settings for dedup's web process (gunicorn reads this file from the working
directory: `gunicorn dedup.wsgi`, as the Dockerfile and docker-compose.yml run it)."""


def post_worker_init(worker) -> None:
    """Warm each worker (webui.warm) after it has loaded Django, before it serves a request."""
    from webui.warm import warm

    warm()
