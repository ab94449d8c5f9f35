"""manage.py rebuild: fingerprint, index and match every article again under the settings."""

from __future__ import annotations

import threading

from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections, connections

from dedup import services
from dedup.management.commands._ops import POLL_SECONDS, progress, wait_until, worker_running
from dedup.models import RebuildJob, RebuildState


class Command(BaseCommand):
    help = (
        "Rebuild the fingerprints, the index and the matches of every processed article under "
        "the current settings and this release (changing fingerprint settings in the admin, or "
        "upgrading to a release that stores them another way, starts one by itself). A running "
        "worker does it (--wait follows it); with no worker, this command does."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--wait", action="store_true", help="with a worker running, follow it to the end"
        )

    def handle(self, *args, **options) -> None:
        worker = worker_running()
        # To this release's version: a new one after an upgrade, else the active one again
        # (every article re-matched, what is missing refilled). A worker runs a new job.
        job, started = services.index_rebuild_start(send=worker)
        self.stdout.write(
            f"{'Started' if started else 'Following'} rebuild {job.pk} to {job.version} "
            f"({job.total} article(s))."
        )
        if not worker:
            self.stdout.write("No worker is running: rebuilding here.")
            job = self.run_here(job)
        if worker and options["wait"]:
            with progress(job.total, "rebuild", self.stderr, unit="article") as bar:
                wait_until(lambda: _state(job), bar)
            job.refresh_from_db()
        elif worker:
            self.stdout.write("The worker is rebuilding: follow it with --wait or in the admin.")
            return
        if job.state != RebuildState.DONE:
            raise CommandError(f"rebuild {job.pk} is {job.state}: {job.message or 'see the log'}")
        self.stdout.write(f"Rebuild {job.pk} done: {job.articles} article(s) under {job.version}.")

    def run_here(self, job: RebuildJob) -> RebuildJob:
        """Run the rebuild in this process, with a progress bar on a terminal."""
        stop = threading.Event()
        watcher = None
        if self.stderr.isatty():
            watcher = threading.Thread(target=self.watch, args=(job, stop), daemon=True)
            watcher.start()
        try:
            return services.index_rebuild(job_id=job.pk)
        finally:
            stop.set()
            if watcher is not None:
                watcher.join()

    def watch(self, job: RebuildJob, stop: threading.Event) -> None:
        """Show the progress of a rebuild running in another thread."""
        try:
            with progress(job.total, "rebuild", self.stderr, unit="article") as bar:
                while not stop.wait(POLL_SECONDS):
                    _, done, total = _state(job)
                    bar.total = total
                    bar.update(done - bar.n)
        finally:
            close_old_connections()
            connections.close_all()  # this thread's own connection


def _state(job: RebuildJob) -> tuple[bool, int, int | None]:
    row = RebuildJob.objects.filter(pk=job.pk).values("state", "done", "total").first()
    if row is None:
        return True, 0, None
    return row["state"] != RebuildState.RUNNING, row["done"], row["total"] or None
