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
RUN pip install . \
    && SECRET_KEY=collectstatic-only DEDUP_VAR_DIR=/tmp/build-var \
       python manage.py collectstatic --noinput \
    && rm -rf /tmp/build-var \
    && useradd --system --home-dir /app dedup \
    && mkdir -p /app/var/media \
    && chown -R dedup /app/var

USER dedup
EXPOSE 8000
CMD ["gunicorn", "dedup.wsgi", "--bind", "0.0.0.0:8000"]
