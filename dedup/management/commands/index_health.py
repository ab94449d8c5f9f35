"""manage.py index_health: what the index holds, what is waiting, and any hot buckets."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from dedup import selectors
from dedup.models import RebuildState


class Command(BaseCommand):
    help = "Print the index's rows, the backlog, the last rebuild and any hot buckets."

    def handle(self, *args, **options) -> None:
        health = selectors.index_health()
        self.stdout.write(f"version in use: {health['active_version']}")
        if health["index_version"] != health["active_version"]:
            self.stdout.write(f"version to rebuild to: {health['index_version']} ({_next(health)})")
        self.stdout.write("")
        rows: list[tuple[str, object]] = [
            (f"articles {status}", n) for status, n in health["articles"].items()
        ]
        rows += [
            ("backlog (waiting or processing)", health["backlog"]),
            ("fingerprints", health["fingerprints"]),
            ("segment rows", health["segment_rows"]),
            ("passage keys", health["passage_keys"]),
        ]
        rows += [(f"matches {kind}", n) for kind, n in health["matches"].items()]
        rebuild = health["rebuild"]
        if rebuild:
            shown = f"{rebuild['id']} {rebuild['state']} {rebuild['done']}/{rebuild['total']}"
            rows.append(("last rebuild", shown))
        hot = health["hot_buckets"]
        rows.append(("hot buckets", len(hot)))
        self.table(["", "rows"], rows)
        if hot:
            self.stdout.write("\nHot buckets (far above the rows even spreading gives):")
            self.table(
                ["table", "key", "rows", "expected"],
                [
                    (b["table_no"], b["key"], b["rows"], b["expected"])
                    for b in health["hot_buckets"]
                ],
            )
        if health["backlog"]:
            self.stdout.write(
                f"\n{health['backlog']} article(s) waiting: is a worker running? "
                "(celery -A dedup worker)"
            )

    def table(self, header: list[str], rows: list[tuple]) -> None:
        """Print rows under a header: the first column left-aligned, the others right."""
        cells = [header, *([str(c) for c in row] for row in rows)]
        widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
        for n, row in enumerate(cells):
            first = row[0].ljust(widths[0])
            rest = "  ".join(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))
            self.stdout.write(f"{first}  {rest}".rstrip())
            if n == 0:
                self.stdout.write("  ".join("-" * w for w in widths))


def _next(health: dict) -> str:
    """Say whether the rebuild to the settings' (and this release's) version is running."""
    rebuild = health["rebuild"]
    if (
        rebuild
        and rebuild["state"] == RebuildState.RUNNING
        and rebuild["version"] == health["index_version"]
    ):
        return "rebuilding"
    return "no rebuild running: a worker starting, or manage.py rebuild, starts it"
