"""manage.py import PATH: load articles from a file or a directory of files, one upload each."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError

from dedup import selectors, services
from dedup.management.commands._ops import progress, wait_until, worker_running
from dedup.models import Article, ArticleStatus, UploadBatch, UploadState

SUFFIXES = (".txt", ".html", ".htm", ".jsonl", ".ndjson", ".json", ".csv", ".zip")
READ = {UploadState.PROCESSING, UploadState.DONE, UploadState.FAILED}  # rows read, or never


class Command(BaseCommand):
    help = (
        "Import articles from a file or a directory (.txt, .html, .jsonl, .csv, .zip), one upload "
        "per file. A running worker processes them (--wait waits until it has); with no worker "
        "running, this command does. Rejected rows are listed as FILE:LINE: MESSAGE and make the "
        "exit status 1."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "path", help="a file, or a directory searched for " + " ".join(SUFFIXES)
        )
        parser.add_argument(
            "--source", default="", help="source of articles whose rows name none (e.g. a site)"
        )
        parser.add_argument(
            "--wait",
            action="store_true",
            help="with a worker running, wait until it has fingerprinted and matched them",
        )
        parser.add_argument("--user", help="username recorded as the uploader")
        parser.add_argument(
            "--timeout",
            type=float,
            help="stop waiting for the worker after this many seconds (the upload goes on)",
        )

    def handle(self, *args, **options) -> None:
        files = _files(Path(options["path"]))
        user = _user(options["user"])
        worker = worker_running()
        self.stdout.write(
            "A worker is running: it reads and processes the uploads."
            if worker
            else "No worker is running: processing here."
        )
        failed = 0
        for path in files:
            with path.open("rb") as handle:
                batch = services.upload_create(
                    file=File(handle, name=_kind_name(path)),
                    name=str(path)[-300:],
                    user=user,
                    source=options["source"],
                )
            if worker:
                batch = self.wait(batch, options["wait"], options["timeout"])
            else:
                batch = self.process(batch)
            failed += self.report(batch)
        if failed:
            raise CommandError(f"{failed} row(s) or file(s) rejected, see above", returncode=1)

    def wait(self, batch: UploadBatch, processed: bool, timeout: float | None) -> UploadBatch:
        """Wait for the worker to read the rows, and with `processed` to process them too."""
        name = Path(batch.name).name

        def read() -> tuple[bool, int, int | None]:
            return _state(batch.pk) in READ, 0, None

        def finished() -> tuple[bool, int, int | None]:
            status = selectors.upload_status(upload_id=batch.pk)
            done = status["state"] in (UploadState.DONE, UploadState.FAILED)
            return done, status["processed"], status["accepted"] or None

        with progress(None, f"{name}: worker reading", self.stderr, unit="article") as bar:
            if not wait_until(finished if processed else read, bar, timeout):
                raise CommandError(
                    f"{batch.name}: the worker has not finished upload {batch.pk} after "
                    f"{timeout:g} s; it goes on (see the admin's upload batches)"
                )
        batch.refresh_from_db()
        if not processed and batch.state == UploadState.PROCESSING:
            self.stdout.write(
                f"{batch.name}: {batch.accepted} article(s) queued for fingerprinting and "
                "matching (--wait waits for them)"
            )
        return batch

    def process(self, batch: UploadBatch) -> UploadBatch:
        """Read the rows and fingerprint and match the articles here."""
        # The worker that starts next finds this upload done: the task upload_create queued
        # and those upload_process queues change nothing then.
        batch = services.upload_process(upload_id=batch.pk)
        pending = list(
            Article.objects.filter(upload=batch, status=ArticleStatus.PENDING)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        size = max(1, settings.DEDUP_CHUNK_SIZE)
        name = Path(batch.name).name
        with progress(len(pending), name, self.stderr, unit="article") as bar:
            for start in range(0, len(pending), size):
                chunk = pending[start : start + size]
                services.articles_process(article_ids=chunk)
                bar.update(len(chunk))
        batch.refresh_from_db()
        return batch

    def report(self, batch: UploadBatch) -> int:
        """Print what became of an upload's rows; return how many were rejected."""
        if batch.state == UploadState.FAILED:
            self.stderr.write(f"{batch.name}: {batch.message or 'could not be read'}")
            return max(1, batch.rejected)
        for error in batch.errors:
            message = error.get("message", "")
            if not message.startswith(f"{batch.name}:"):  # the readers name file and line
                message = f"{batch.name}:{error.get('row', '?')}: {message}"
            self.stderr.write(message)
        if batch.rejected > len(batch.errors):
            self.stderr.write(f"{batch.name}: and {batch.rejected - len(batch.errors)} more")
        self.stdout.write(
            f"{batch.name}: {batch.total_rows} row(s), {batch.accepted} accepted, "
            f"{batch.rejected} rejected (upload {batch.pk}, {batch.state})"
        )
        return batch.rejected


def _files(path: Path) -> list[Path]:
    """Return the files to import: the path itself, or the known kinds below a directory."""
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and (p.suffix.lower() in SUFFIXES or _spark_part(p))
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        if not found:
            raise CommandError(f"{path}: no {', '.join(SUFFIXES)} files in this directory")
        return found
    raise CommandError(f"{path}: no such file or directory")


def _spark_part(path: Path) -> bool:
    """Tell whether a file is a part of a Spark output on a cluster's file system (the
    spark command's DIR/review.jsonl is then a directory of part-00000, part-00001...)."""
    return (
        path.name.startswith("part-")
        and not path.suffix
        and path.parent.suffix.lower() in SUFFIXES
        and (path.parent / "_SUCCESS").exists()
    )


def _kind_name(path: Path) -> str:
    """Return the name a file is read by (its kind from its suffix): a Spark part file takes
    its directory's suffix."""
    return f"{path.name}{path.parent.suffix}" if _spark_part(path) else path.name


def _user(username: str | None):
    if not username:
        return None
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        raise CommandError(f"--user {username}: no such user (see manage.py demo)") from None


def _state(pk: int) -> str:
    return UploadBatch.objects.filter(pk=pk).values_list("state", flat=True).first() or ""
