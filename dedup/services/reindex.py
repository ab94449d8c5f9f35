"""Settings and rebuilds: a settings change that alters what is stored starts a rebuild
(settings_update, through dedup.rebuilds); index_rebuild fingerprints, indexes and matches
every article under the new version, then switches to it."""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from dedup import index, rebuilds
from dedup.db import change_lock
from dedup.engine.config import ConfigError
from dedup.engine.plan import PlanError
from dedup.errors import SettingsInvalid
from dedup.models import (
    Article,
    ArticleStatus,
    Fingerprint,
    Match,
    MatchKind,
    PassageKey,
    RebuildJob,
    SegmentRow,
    Settings,
)
from dedup.services.processing import _matches_find

EDITABLE = ("threshold", "k_max", "capacity", "top_n", "tokenizer", "retention_days",
            "stop_words", "near", "partial", "near_short", "partial_min_chars")  # fmt: skip


def settings_update(**fields) -> RebuildJob | None:
    """Change the settings; when what is stored changes (the index version), start a rebuild
    unless one to the new version is running."""
    unknown = sorted(set(fields) - set(EDITABLE))
    if unknown:
        raise SettingsInvalid(f"unknown setting(s) {', '.join(unknown)}; use {', '.join(EDITABLE)}")
    with transaction.atomic():
        row = rebuilds.settings_locked()
        for name, value in fields.items():
            setattr(row, name, value)
        try:
            row.full_clean(exclude=["active_version", "active_config"])
            row.index_version  # noqa: B018 (builds the Config and the Plan: bad ones raise)
        except (ConfigError, PlanError) as error:
            raise SettingsInvalid(str(error)) from error
        except Exception as error:  # ValidationError: name the fields
            raise SettingsInvalid(str(error)) from error
        if row.threshold > row.k_max:
            raise SettingsInvalid(f"threshold {row.threshold} is over k_max {row.k_max}")
        row.save()
        job, _ = rebuilds.rebuild_start(row)
        return job


def index_rebuild(*, job_id: int) -> RebuildJob:
    """Fingerprint, index and match every article under the new version, then switch to it."""
    job = RebuildJob.objects.get(id=job_id)
    settings = index.settings_current()
    if job.state != "running":
        return job
    if settings.index_version != job.version:
        RebuildJob.objects.filter(id=job_id).update(
            state="failed", message=rebuilds.superseded(settings.index_version)
        )
        job.refresh_from_db()
        return job
    detector = index.detector_for(settings)
    version, plan = job.version, settings.plan()
    size = max(1, django_settings.DEDUP_CHUNK_SIZE)
    RebuildJob.objects.filter(id=job_id).update(
        done=0, total=Article.objects.filter(status=ArticleStatus.DONE).count()
    )
    done = Article.objects.filter(status=ArticleStatus.DONE)
    last = 0
    while True:  # every article, in order: a resumed rebuild starts over, harmlessly
        if not RebuildJob.objects.filter(id=job_id, state="running").exists():
            job.refresh_from_db()
            return job
        chunk = list(done.filter(id__gt=last).order_by("id").values_list("id", "body")[:size])
        if not chunk:
            break
        _rebuild_chunk(chunk, settings, detector, version, plan)
        last = chunk[-1][0]
        RebuildJob.objects.filter(id=job_id).update(done=F("done") + len(chunk))
    while True:  # articles a worker finished under the old version meanwhile
        missing = list(
            done.exclude(fingerprints__version=version)
            .order_by("id")
            .values_list("id", "body")[:size]
        )
        if not missing:
            break
        _rebuild_chunk(missing, settings, detector, version, plan)
    with transaction.atomic():
        row = Settings.objects.select_for_update().get(pk=1)
        if row.index_version != version:  # the settings moved on in the meantime
            RebuildJob.objects.filter(id=job_id, state="running").update(
                state="failed", message=rebuilds.superseded(row.index_version)
            )
        if not RebuildJob.objects.filter(id=job_id, state="running").exists():
            job.refresh_from_db()
            return job
        Settings.objects.filter(pk=1).update(
            active_version=version, active_config=row.config_fields()
        )
        Match.objects.filter(kind=MatchKind.EXACT).update(version=version)
        Match.objects.exclude(version=version).delete()  # pairs the new version does not find
        SegmentRow.objects.exclude(version=version).delete()
        PassageKey.objects.exclude(version=version).delete()
        Fingerprint.objects.exclude(version=version).delete()
        RebuildJob.objects.filter(id=job_id).update(state="done", finished_at=timezone.now())
    job.refresh_from_db()
    return job


def _rebuild_chunk(chunk, settings, detector, version, plan) -> None:
    ids = [article_id for article_id, _ in chunk]
    stored = index.features_load(article_ids=ids, version=version)
    new = []
    for article_id, body in chunk:
        if article_id not in stored:
            fingerprint, features = detector.fingerprint_and_features(body)
            new.append(index.Indexed(article_id, fingerprint, features))
            stored[article_id] = features
    with transaction.atomic():
        index.index_store(items=new, version=version, plan=plan)
    items = [index.Indexed(article_id, None, stored[article_id]) for article_id in ids]
    rows = []
    for result in _matches_find(items, settings, detector, version, plan):
        if isinstance(result, Exception):
            raise result
        rows += result
    # A rebuild: the new verdict replaces the old one. Two articles of one chunk find each
    # other twice: one row per pair.
    rows = list({(row.a_id, row.b_id): row for row in rows}.values())
    with transaction.atomic():
        change_lock()  # new pairs take ids in commit order (the API's cursors)
        Match.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["a", "b"],
            update_fields=[
                "kind",
                "distance",
                "similarity",
                "shared_passages",
                "shared_chars",
                "version",
            ],
        )
