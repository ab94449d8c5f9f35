"""gunicorn's settings for dedup's web process (gunicorn reads this file from the working
directory: `gunicorn dedup.wsgi`, as the Dockerfile and docker-compose.yml run it)."""

import os


def post_worker_init(worker) -> None:
    """Warm each worker (webui.warm) after it has loaded Django, before it serves a request;
    then leave what it loaded out of the garbage collector's full passes."""
    import gc

    from webui.warm import warm

    warm()
    # Django, the engine and the warmed caches live as long as the worker: frozen, the
    # collector's full passes stop walking them for every request's garbage.
    gc.collect()
    gc.freeze()


# Worker processes, and threads in each (gunicorn's gthread workers when more than one): a
# request spends about half its time waiting for PostgreSQL, and a thread of the same process
# serves another meanwhile, sharing the process's warmed caches (they are guarded by locks).
# Each thread keeps a database connection: workers x threads per web container.
workers = int(os.environ.get("GUNICORN_WORKERS", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))

# Each worker is replaced after this many requests (a little more or less, so that they are not
# all replaced at once): the memory a worker's caches and Python's allocator keep grows with
# what it served, and a fresh worker gives it back.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "2000"))
max_requests_jitter = max_requests // 10
