"""No English left in the Chinese admin and dashboard (issue 31: the settings form, the rebuild
notice and list, webhooks and their deliveries, object names in the audit log were English).

Signed in as an admin with zh-Hans, the test walks every admin changelist, add and change page
of the project's models and every dashboard page, and fails on any text of the project's own
left untranslated: a msgid of the project's .po whose msgstr is empty, an English verbose
name, help text or choice the project defines that has no translation, or a run of English
words (what a label without a verbose name, or a message not marked for translation, shows).
"""

from __future__ import annotations

import datetime as dt
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse
from django.utils import translation

from dedup import services
from dedup.management.commands import demo
from dedup.models import (
    Article,
    AuditEntry,
    Decision,
    Match,
    RebuildJob,
    Settings,
    UploadBatch,
    Webhook,
    WebhookDelivery,
)
from tests import roles

ROOT = Path(__file__).resolve().parents[2]
PO = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
# English that is no text of ours: names of programs, formats and settings, shown as they are.
KEPT = re.compile(
    r"celery -A dedup worker|manage\.py \w+|DEDUP_\w+|X-Dedup-\w+|\S*[\d/._]\S*"
    r"|https?://\S+|\b(?:CSV|JSON|API|URL|ID|HTTP|HTTPS|SimHash|MinHash|Django|jieba|rjieba"
    r"|Celery|Redis|PostgreSQL|Markdown|Excel|Playwright|Ctrl|Enter|Esc)\b"
)
ENGLISH_RUN = re.compile(r"[A-Za-z][a-z]+(?:[ \-'][A-Za-z][a-z]+)+")
SKIPPED = {"script", "style", "textarea", "code", "pre", "option"}


class Visible(HTMLParser):
    """Collect a page's text and the attributes people read (title, placeholder, alt)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in SKIPPED:
            self.skip += 1
        for name, value in attrs:
            if name in ("title", "placeholder", "alt", "aria-label") and value:
                self.texts.append(value)
            if tag == "input" and name == "value" and ("type", "submit") in attrs and value:
                self.texts.append(value)

    def handle_endtag(self, tag):
        if tag in SKIPPED and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip and data.strip():
            self.texts.append(data.strip())


def visible_texts(html: str) -> list[str]:
    parser = Visible()
    parser.feed(html)
    return parser.texts


def django_msgids() -> set[str]:
    """Django's own admin and auth messages (a few new ones have no Chinese in Django yet:
    "Model name", the screen readers' column of the admin's index): not ours to translate."""
    import django

    base = Path(django.__file__).parent / "contrib"
    found = set()
    for app in ("admin", "auth"):
        found |= msgids(base / app / "locale" / "en" / "LC_MESSAGES" / "django.po", every=True)
    return found


def untranslated_msgids() -> set[str]:
    """The project .po's msgids whose msgstr is empty."""
    return msgids(PO)


def msgids(po: Path, every: bool = False) -> set[str]:
    """A .po's msgids: those whose msgstr is empty, or every one."""
    found, text = set(), po.read_text()
    for block in text.split("\n\n"):
        if "#, fuzzy" in block and 'msgid ""\nmsgstr ""' in block:
            continue  # the header
        msgid = re.search(r'^msgid ((?:".*"\n?)+)', block, re.M)
        msgstr = re.search(r'^msgstr ((?:".*"\n?)+)', block, re.M)
        if msgid and msgstr:
            ident = "".join(re.findall(r'"(.*)"', msgid.group(1)))
            translated = "".join(re.findall(r'"(.*)"', msgstr.group(1)))
            if ident and (every or not translated):
                found.add(ident.replace('\\"', '"'))
    return found


def project_labels() -> set[str]:
    """The English verbose names, help texts and choices of the project's models that have no
    Chinese (a field without a verbose name shows its name: 'updated at')."""
    labels = set()
    for model in apps.get_app_config("dedup").get_models():
        meta = model._meta
        names = [meta.verbose_name, meta.verbose_name_plural]
        for field in meta.get_fields():
            if not hasattr(field, "verbose_name"):
                continue
            names += [field.verbose_name, getattr(field, "help_text", "")]
            names += [label for _value, label in getattr(field, "flatchoices", []) or []]
        for name in names:
            with translation.override("en"):
                english = str(name)
            with translation.override("zh-hans"):
                chinese = str(name)
            if english and chinese == english and re.search("[A-Za-z]{3}", english):
                labels.add(english.lower())
    return labels


DJANGOS: set[str] = set()


def english_left(html: str, untranslated: set[str], labels: set[str]) -> list[str]:
    left = []
    for text in visible_texts(html):
        if text in DJANGOS:
            continue
        rest = KEPT.sub(" ", text)
        ours = text in untranslated or text.lower().rstrip(":") in labels
        if ours or ENGLISH_RUN.search(rest):
            left.append(text)
    return left


@pytest.fixture
def world(django_user_model, tmp_path, settings):
    """One of each thing the admin lists, named in Chinese where an editor names it."""
    settings.MEDIA_ROOT = str(tmp_path)
    user = roles.user_in("admin", "guanli", is_staff=True, is_superuser=True)
    when = dt.datetime(2024, 5, 1, 8, tzinfo=dt.UTC)
    a, b = (
        Article.objects.create(
            title=f"标题{n}", body="今天北京的天气很好，我们去公园散步。" * 3, source="人民日报",
            length=54, dated_at=when,
        )
        for n in (1, 2)
    )  # fmt: skip
    Match.objects.create(a=a, b=b, kind="near", distance=1, similarity=0.9)
    Decision.objects.create(a=a, b=b, verdict="duplicate", decided_by=user)
    UploadBatch.objects.create(name="稿件.jsonl", uploaded_by=user, state="done")
    UploadBatch.objects.create(name=demo.DEMO_UPLOAD, uploaded_by=user, state="done")
    hook = Webhook.objects.create(url="https://example.com/hook", secret="s" * 32)
    WebhookDelivery.objects.create(webhook=hook, event="match.created", payload={})
    Settings.load()
    RebuildJob.objects.create(version="v-test", state="running", total=10, done=4)
    # The audit log keeps an object's name as the acting user's language wrote it (as Django's
    # LogEntry.object_repr): a Chinese admin's token, whatever language an earlier test left on.
    with translation.override("zh-hans"):
        services.token_issue(owner=user, name="报社系统")
    return user, a, b


def admin_pages() -> list[str]:
    pages = [reverse("admin:index")]
    for model in admin.site._registry:
        info = model._meta.app_label, model._meta.model_name
        pages.append(reverse("admin:{}_{}_changelist".format(*info)))
        pages.append(reverse("admin:{}_{}_add".format(*info)))  # a refusal says so in Chinese
        first = model.objects.order_by("pk").first()
        if first is not None:
            pages.append(reverse("admin:{}_{}_change".format(*info), args=[first.pk]))
            pages.append(reverse("admin:{}_{}_history".format(*info), args=[first.pk]))
    return pages


def dashboard_pages(a: Article, b: Article) -> list[str]:
    """Every page of the dashboard (the access matrix's list of its addresses, so a page added
    later is walked too), its parameters filled with the world's things; a few filters more."""
    from tests.webui.test_access_matrix import POST_ONLY, dashboard

    upload = UploadBatch.objects.order_by("pk").first()
    values = {"article_id": a.pk, "a": a.pk, "b": b.pk, "upload_id": upload.pk}
    values |= {"source": a.source, "name": a.source}

    def fill(route: str) -> str:
        return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values.get(m.group(1), a.pk)), route)

    pages = [fill(r) for r in dashboard() if r not in POST_ONLY]
    pages = [p for p in pages if not p.endswith((".json", ".csv"))]  # data, not pages
    assert {"/", "/overview/", "/audit/", f"/compare/{a.pk}/{b.pk}/"} <= set(pages)
    return [*pages, "/?status=all", "/articles/?q=北京"]


def test_the_chinese_admin_and_dashboard_have_no_english_of_ours(world):
    user, a, b = world
    client = Client(headers={"accept-language": "zh-hans"})
    client.force_login(user)
    # A settings change that starts a rebuild: its notice, then the audit log names objects.
    form = client.get(reverse("admin:dedup_settings_change", args=[1])).context["adminform"]
    data = {name: value for name, value in form.form.initial.items() if value is not None}
    data |= {"top_n": 200}
    data = {k: v for k, v in data.items() if k in services.EDITABLE}
    changed = client.post(reverse("admin:dedup_settings_change", args=[1]), data, follow=True)
    assert changed.status_code == 200
    assert AuditEntry.objects.exists()
    notice = changed.content.decode()
    untranslated, labels = untranslated_msgids(), project_labels()
    DJANGOS.update(django_msgids())
    problems = {}
    left = english_left(notice, untranslated, labels)
    if left:
        problems["(settings saved)"] = left
    for url in admin_pages() + dashboard_pages(a, b):
        response = client.get(url, follow=True)
        assert response.status_code in (200, 403), url  # 403: no adding to a log
        left = english_left(response.content.decode(), untranslated, labels)
        if left:
            problems[url] = sorted(set(left))
    assert not problems, "\n".join(f"{url}: {left}" for url, left in problems.items())


def test_the_default_thresholds_help_says_the_queue_does_not_use_it(world):
    """docs/editor.md: the default threshold "is not used by the queue"; its help text said
    "distance shown to editors at first"."""
    user, _a, _b = world
    client = Client(headers={"accept-language": "zh-hans"})
    client.force_login(user)
    html = client.get(reverse("admin:dedup_settings_change", args=[1])).content.decode()
    assert "审核队列不使用它" in html
    with translation.override("en"):
        help_text = str(Settings._meta.get_field("threshold").help_text)
    assert "the queue does not use it" in help_text and "shown to editors" not in help_text
