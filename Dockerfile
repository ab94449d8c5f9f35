# The image of web, worker and beat (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    DEDUP_VAR_DIR=/app/var \
    STATIC_ROOT=/app/static-root

WORKDIR /app
COPY . .
# gcc builds verification's compiled merges (dedup/engine/_native.c), then goes. An editable
# install puts them beside the sources, which PYTHONPATH puts first.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install -e . \
    && python -c "import dedup.engine._native" \
    && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* \
    && SECRET_KEY=collectstatic-only DEDUP_VAR_DIR=/tmp/build-var \
       python manage.py collectstatic --noinput \
    && rm -rf /tmp/build-var \
    && useradd --system --home-dir /app dedup \
    && mkdir -p /app/var/media \
    && chown -R dedup /app/var

USER dedup
EXPOSE 8000
CMD ["gunicorn", "dedup.wsgi", "--bind", "0.0.0.0:8000"]
