"""The admin (admins in, editors out, the settings singleton) and the operations commands."""

from __future__ import annotations

import importlib
import io
import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from dedup import services
from dedup.management.commands import demo
from dedup.models import (
    ApiToken,
    Article,
    ArticleStatus,
    Match,
    PassageKey,
    RebuildJob,
    SegmentRow,
    Settings,
    UploadBatch,
)
from tests import roles

pytestmark = pytest.mark.django_db

NEWS = (
    "国务院新闻办公室今天发表白皮书，全面介绍中国在生态文明建设方面取得的进展。白皮书指出，"
    "过去十年，全国森林覆盖率持续提高，空气质量明显改善，重点流域水质稳步好转。"
    "白皮书还介绍了国家公园体制试点、生态保护红线划定和污染防治攻坚战的成效。"
)
COPY = NEWS.replace("今天", "昨天").replace("稳步好转", "持续好转")
OTHER = (
    "本市今年计划新建和改扩建中小学二十所，新增学位两万个。教育部门表示，"
    "新学校将优先布局在人口增长较快的新城区，并同步配建体育场馆和图书馆。"
)


@pytest.fixture(autouse=True)
def no_worker(request, monkeypatch, settings, tmp_path):
    """Commands see no worker (unless the test starts one) and store uploads in tmp_path."""
    if "worker" in request.fixturenames:
        return  # the worker reads uploads from the MEDIA_ROOT of the environment
    settings.MEDIA_ROOT = tmp_path / "media"
    for name in ("import", "rebuild"):
        module = importlib.import_module(f"dedup.management.commands.{name}")
        monkeypatch.setattr(module, "worker_running", lambda: False)


def user_make(username: str, group: str, *, staff: bool = False):
    user = get_user_model().objects.create_user(
        username, password="pw", is_staff=staff, is_superuser=staff
    )
    user.groups.add(roles.group(group))
    return user


@pytest.fixture
def admin_client(client):
    client.force_login(user_make("boss", "admin", staff=True))
    return client


@pytest.fixture
def editor_client(client):
    client.force_login(user_make("ed", "editor"))
    return client


def run(*args, **options) -> tuple[str, str]:
    """Run a command; return what it wrote to stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def jsonl(path, rows: list) -> str:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def processed_articles() -> list[Article]:
    articles = services.articles_ingest(
        rows=[
            {"title": "白皮书", "text": NEWS},
            {"title": "白皮书（转载）", "text": COPY},
            {"title": "新学校", "text": OTHER},
        ]
    )
    services.articles_process(article_ids=[a.pk for a in articles])
    return articles


# --- admin ----------------------------------------------------------------------------------


def test_admin_pages_load_for_an_admin(admin_client):
    articles = processed_articles()
    upload = UploadBatch.objects.create(name="a.jsonl", errors=[{"row": 2, "message": "bad"}])
    job = RebuildJob.objects.create(version="v", total=4, done=1)
    token, _ = ApiToken.issue(get_user_model().objects.get(username="boss"), "ci")
    match = Match.objects.first()
    assert match is not None
    pages = ["admin:index", "admin:dedup_apitoken_add"]
    pages += [f"admin:dedup_{model}_changelist" for model in ("article", "fingerprint", "match")]
    pages += [f"admin:dedup_{model}_changelist" for model in ("uploadbatch", "decision")]
    pages += ["admin:dedup_rebuildjob_changelist", "admin:dedup_apitoken_changelist"]
    for page in pages:
        response = admin_client.get(reverse(page))
        assert response.status_code == 200, page
    for name, pk in (
        ("article", articles[0].pk),
        ("match", match.pk),
        ("uploadbatch", upload.pk),
        ("rebuildjob", job.pk),
        ("apitoken", token.pk),
    ):
        response = admin_client.get(reverse(f"admin:dedup_{name}_change", args=[pk]))
        assert response.status_code == 200, name
    assert (
        "row 2: bad"
        in admin_client.get(
            reverse("admin:dedup_uploadbatch_change", args=[upload.pk])
        ).content.decode()
    )
    response = admin_client.get(reverse("admin:dedup_settings_changelist"), follow=True)
    assert response.status_code == 200
    assert Settings.load().index_version in response.content.decode()
    assert ">dedup</a>" in admin_client.get(reverse("admin:index")).content.decode()


def test_article_admin_shows_the_body_escaped(admin_client):
    (article,) = services.articles_ingest(rows=[{"text": "<script>alert(1)</script>" + NEWS}])
    page = admin_client.get(reverse("admin:dedup_article_change", args=[article.pk]))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.content.decode()
    assert "<script>alert(1)" not in page.content.decode()


def test_admin_deletes_an_upload_with_its_articles_after_asking(admin_client, tmp_path):
    first = jsonl(
        tmp_path / "first.jsonl", [{"id": "n1", "text": NEWS}, {"id": "o1", "text": OTHER}]
    )
    second = jsonl(
        tmp_path / "second.jsonl", [{"id": "c2", "text": COPY}, {"id": "e2", "text": NEWS}]
    )
    run("import", first)
    run("import", second)
    one, two = UploadBatch.objects.order_by("id")
    news = Article.objects.get(external_id="n1")
    exact = Article.objects.get(external_id="e2")
    assert exact.exact_of_id == news.id and Match.objects.filter(a=news).count() == 2
    changelist = reverse("admin:dedup_uploadbatch_changelist")
    chosen = {"action": "uploads_delete_with_articles", "_selected_action": [one.id]}
    asked = admin_client.post(changelist, chosen)
    assert asked.status_code == 200 and asked.context["articles"] == 2
    assert asked.context["matches"] == 2 and Article.objects.count() == 4  # nothing gone yet
    done = admin_client.post(changelist, {**chosen, "confirmed": "yes"}, follow=True)
    assert done.status_code == 200
    assert list(UploadBatch.objects.values_list("id", flat=True)) == [two.id]
    assert set(Article.objects.values_list("external_id", flat=True)) == {"c2", "e2"}
    assert not Match.objects.exists()
    assert not SegmentRow.objects.exclude(article__upload=two).exists()
    assert not PassageKey.objects.exclude(article__upload=two).exists()
    exact.refresh_from_db()  # its original is gone: it goes to the workers again
    assert (exact.status, exact.exact_of_id) == (ArticleStatus.PENDING, None)


def test_an_upload_deleted_in_the_admin_goes_with_its_articles_whatever_the_way(
    admin_client, tmp_path
):
    """Django's own "delete selected" is not offered (it deleted the upload alone, leaving
    its articles claiming an upload that was gone); the upload's delete page takes them too."""
    run("import", jsonl(tmp_path / "one.jsonl", [{"id": "n1", "text": NEWS}]))
    upload = UploadBatch.objects.get()
    changelist = admin_client.get(reverse("admin:dedup_uploadbatch_changelist"))
    assert 'value="delete_selected"' not in changelist.content.decode()
    assert 'value="uploads_delete_with_articles"' in changelist.content.decode()
    deleted = admin_client.post(
        reverse("admin:dedup_uploadbatch_delete", args=[upload.pk]), {"post": "yes"}
    )
    assert deleted.status_code == 302
    assert not UploadBatch.objects.exists() and not Article.objects.exists()


def test_admin_is_refused_to_an_editor(editor_client):
    for page in ("admin:index", "admin:dedup_article_changelist", "admin:dedup_settings_change"):
        args = [Settings.load().pk] if page.endswith("settings_change") else []
        response = editor_client.get(reverse(page, args=args))
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))


def test_settings_admin_cannot_add_a_second_row_or_delete_it(admin_client):
    row = Settings.load()
    assert admin_client.get(reverse("admin:dedup_settings_add")).status_code == 403
    assert admin_client.post(reverse("admin:dedup_settings_add"), {}).status_code == 403
    delete = reverse("admin:dedup_settings_delete", args=[row.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert Settings.objects.count() == 1


def settings_form(**changes) -> dict:
    row = Settings.load()
    fields = {name: getattr(row, name) for name in services.EDITABLE}
    return {**fields, **changes}


def test_settings_admin_change_of_fingerprints_starts_a_rebuild(admin_client):
    url = reverse("admin:dedup_settings_change", args=[Settings.load().pk])
    response = admin_client.post(url, settings_form(top_n=128), follow=True)
    assert response.status_code == 200
    assert Settings.load().top_n == 128
    job = RebuildJob.objects.get()
    assert job.version == Settings.load().index_version
    assert f"重建 {job.pk}</a> 已开始" in response.content.decode()  # the notice, in Chinese


def test_settings_admin_change_of_threshold_starts_no_rebuild(admin_client):
    url = reverse("admin:dedup_settings_change", args=[Settings.load().pk])
    admin_client.post(url, settings_form(threshold=2))
    assert Settings.load().threshold == 2
    assert not RebuildJob.objects.exists()


def test_settings_admin_refuses_a_threshold_over_k_max(admin_client):
    url = reverse("admin:dedup_settings_change", args=[Settings.load().pk])
    response = admin_client.post(url, settings_form(threshold=12, k_max=10))
    assert response.status_code == 200  # the form again, with the error
    assert "不能超过索引的最大距离（" in response.content.decode()
    assert Settings.load().threshold == 3


def test_settings_admin_sets_the_short_text_threshold_and_refuses_one_over_1(admin_client):
    url = reverse("admin:dedup_settings_change", args=[Settings.load().pk])
    assert "near_short" in admin_client.get(url).content.decode()
    response = admin_client.post(url, settings_form(near_short=1.5))
    assert response.status_code == 200  # the form again, with the error
    assert "near_short" in response.context_data["adminform"].form.errors
    admin_client.post(url, settings_form(near_short=0.3))
    assert Settings.load().near_short == 0.3 and not RebuildJob.objects.exists()


def test_api_token_admin_shows_the_secret_once_and_keeps_its_hash(admin_client):
    boss = get_user_model().objects.get(username="boss")
    response = admin_client.post(
        reverse("admin:dedup_apitoken_add"), {"user": boss.pk, "name": "ci"}, follow=True
    )
    token = ApiToken.objects.get(name="ci")
    page = response.content.decode()
    secret = page.split("Authorization: Token ")[1].split("<")[0]
    assert ApiToken.hash_key(secret) == token.key_hash


# --- commands -------------------------------------------------------------------------------


def test_import_with_bad_row_keeps_good_rows(tmp_path):
    path = jsonl(
        tmp_path / "batch.jsonl",
        [{"id": "n1", "title": "白皮书", "text": NEWS}, '{"id": "n2", "text": ', {"text": OTHER}],
    )
    with pytest.raises(CommandError) as failure:
        run("import", path, "--source", "新华社")
    assert failure.value.returncode == 1
    batch = UploadBatch.objects.get()
    assert (batch.total_rows, batch.accepted, batch.rejected) == (3, 2, 1)
    assert batch.state == "done"
    articles = Article.objects.filter(upload=batch).order_by("row")
    assert [a.row for a in articles] == [1, 3]
    assert {a.status for a in articles} == {ArticleStatus.DONE}
    assert {a.source for a in articles} == {"新华社"}


def test_import_prints_the_row_of_each_rejected_row(tmp_path):
    path = jsonl(tmp_path / "batch.jsonl", [{"text": NEWS}, '{"id": 2', {"title": "no text"}])
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError):
        call_command("import", path, stdout=out, stderr=err)
    lines = err.getvalue().splitlines()
    assert lines[0].startswith(f"{path}:2: not valid JSON")
    assert lines[1].startswith(f"{path}:3: ") and '"body"' in lines[1]
    assert "3 row(s), 1 accepted, 2 rejected" in out.getvalue()


def test_import_with_a_worker_running_leaves_the_work_to_it(worker, tmp_path):
    path = jsonl(tmp_path / "queued.jsonl", [{"text": NEWS}, {"text": COPY}, "{bad"])
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError):
        call_command("import", path, "--wait", "--timeout", "60", stdout=out, stderr=err)
    assert "A worker is running" in out.getvalue()
    assert f"{path}:3: not valid JSON" in err.getvalue()
    batch = UploadBatch.objects.get()
    assert (batch.state, batch.accepted, batch.rejected) == ("done", 2, 1)
    assert Match.objects.count() == 1


def test_import_of_good_rows_exits_zero_and_finds_the_copy(tmp_path):
    path = jsonl(tmp_path / "ok.jsonl", [{"text": NEWS}, {"text": COPY}])
    out, _ = run("import", path)
    assert "2 row(s), 2 accepted, 0 rejected" in out
    assert Match.objects.count() == 1


def test_import_of_a_directory_makes_one_upload_per_file(tmp_path):
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "a.txt").write_text(NEWS, encoding="utf-8")
    (tmp_path / "pages" / "b.html").write_text(f"<p>{OTHER}</p>", encoding="utf-8")
    (tmp_path / "pages" / "notes.md").write_text("skipped", encoding="utf-8")
    run("import", str(tmp_path / "pages"))
    assert sorted(b.name.rsplit("/", 1)[1] for b in UploadBatch.objects.all()) == [
        "a.txt",
        "b.html",
    ]
    assert Article.objects.filter(status=ArticleStatus.DONE).count() == 2


def test_import_reads_a_spark_output_of_part_files(tmp_path):
    # On a cluster's file system the spark command's review.jsonl is a directory of part
    # files with no suffix, and a _SUCCESS marker beside them.
    review = tmp_path / "out" / "review.jsonl"
    review.mkdir(parents=True)
    jsonl(review / "part-00000", [{"id": "a", "text": NEWS}])
    jsonl(review / "part-00001", [{"id": "b", "text": COPY}])
    (review / ".part-00000.crc").write_bytes(b"crc")
    (review / "_SUCCESS").write_bytes(b"")
    out, _ = run("import", str(review))
    assert out.count("1 row(s), 1 accepted, 0 rejected") == 2
    assert sorted(Article.objects.values_list("external_id", flat=True)) == ["a", "b"]
    assert Match.objects.count() == 1


def test_import_of_a_missing_path_says_so(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        run("import", str(tmp_path / "nothing.jsonl"))


def test_index_health_prints_rows_backlog_and_hot_buckets():
    processed_articles()
    services.articles_ingest(rows=[{"text": OTHER + "。补充"}])  # waiting: backlog 1
    out, _ = run("index_health")
    assert "version in use: " + Settings.load().active_version in out
    lines = dict(re.findall(r"^(\S.*?)\s{2,}(\S+)$", out, flags=re.MULTILINE))
    assert lines["articles done"] == "3"
    assert lines["backlog (waiting or processing)"] == "1"
    assert int(lines["segment rows"]) == SegmentRow.objects.count() > 0
    assert lines["matches near"] == "1"
    assert lines["hot buckets"] == "0"
    assert "is a worker running?" in out


def test_prune_removes_index_rows_outside_the_retention_window():
    old, *_ = services.articles_ingest(
        rows=[{"text": NEWS, "published_at": (timezone.now() - timedelta(days=90)).isoformat()}]
    )
    new, *_ = services.articles_ingest(rows=[{"text": OTHER}])
    services.articles_process(article_ids=[old.pk, new.pk])
    out, _ = run("prune")
    assert "0 removed" in out
    services.settings_update(retention_days=30)
    # 90 days old: outside the days that have a partition of their own, in the default one.
    segments, passages = SegmentRow.objects.filter(article=old).count(), old.passage_keys.count()
    out, _ = run("prune")
    assert f"removed {segments} segment row(s)" in out
    assert f"and {passages} passage key(s)" in out
    assert not SegmentRow.objects.filter(article=old).exists()
    assert not PassageKey.objects.filter(article=old).exists()
    assert SegmentRow.objects.filter(article=new).exists()


def test_rebuild_runs_here_without_a_worker():
    processed_articles()
    out, _ = run("rebuild")
    job = RebuildJob.objects.get()
    assert (job.state, job.done, job.total) == ("done", 3, 3)
    assert f"Rebuild {job.pk} done: 3 article(s)" in out
    assert Match.objects.count() == 1


@pytest.fixture
def groups():
    """The role groups, as migrate leaves them (a transactional test run before may have
    emptied every table)."""
    return roles.group("admin"), roles.group("editor")


def test_demo_loads_the_corpus_and_users_once(monkeypatch, groups):
    rows = demo.demo_rows(1)  # one original per length band and their copies
    monkeypatch.setattr(demo, "demo_rows", lambda per_band: rows)
    out, _ = run("demo", force=True)
    assert "password dedup-admin" in out and "password dedup-editor" in out
    again, _ = run("demo", force=True)
    assert "already loaded" in again
    batch = UploadBatch.objects.get()
    assert batch.name == demo.DEMO_UPLOAD
    services.upload_process(upload_id=batch.pk)  # what the worker does
    batch.refresh_from_db()
    assert batch.rejected == 0 and batch.accepted == len(rows) > 20
    kinds = {row["title"].rsplit("（", 1)[1] for row in rows}
    assert {"原文）", "繁体）", "网页转载）", "嵌入页面）"} <= kinds
    users = get_user_model().objects
    admin, editor = users.get(username="admin"), users.get(username="editor")
    assert admin.is_superuser and admin.is_staff and admin.check_password("dedup-admin")
    assert not editor.is_staff and editor.check_password("dedup-editor")
    assert list(admin.groups.values_list("name", flat=True)) == ["admin"]
    assert list(editor.groups.values_list("name", flat=True)) == ["editor"]
    assert editor.has_perm("dedup.view_article") and not editor.has_perm("dedup.change_settings")


def test_demo_keeps_a_changed_password(groups):
    run("demo", force=True, per_band=1)
    admin = get_user_model().objects.get(username="admin")
    admin.set_password("changed")
    admin.save()
    run("demo", force=True)
    admin.refresh_from_db()
    assert admin.check_password("changed")


def test_demo_refuses_to_run_with_debug_off():
    with pytest.raises(CommandError, match="DEBUG=1"):
        run("demo")
    assert not get_user_model().objects.exists()


def test_an_upload_row_may_name_its_id_external_id_as_the_dashboard_does(tmp_path):
    """The dashboard shows a row's own id as "external id": a file using that name keeps it
    (it was dropped without a word); `id` wins when a row has both."""
    run(
        "import",
        jsonl(
            tmp_path / "named.jsonl",
            [
                {"external_id": "trial-001", "text": NEWS},
                {"id": "first", "external_id": "second", "text": OTHER},
            ],
        ),
    )
    assert set(Article.objects.values_list("external_id", flat=True)) == {"trial-001", "first"}


@pytest.mark.django_db(transaction=True)  # CREATE/DROP INDEX CONCURRENTLY: no transaction
def test_a_worker_builds_the_text_index_a_range_at_a_time_and_the_command_drops_and_builds_it(
    editor_client, settings
):
    """A chunk that brings DEDUP_TEXT_INDEX_ROWS finished articles past the last range builds
    the next one (dedup.textindex); search finds the text with or without it."""
    from dedup.textindex import text_index_drop, text_ranges

    settings.DEDUP_TEXT_INDEX_ROWS = 3
    text_index_drop()  # ranges another test left
    try:
        articles = processed_articles()
        assert [(r.lo, r.hi) for r in text_ranges()] == [(0, max(a.pk for a in articles))]
        out, _ = run("text_index")
        assert f"Text index: 1 range(s) up to article {max(a.pk for a in articles)}" in out
        assert "0 newer article(s) read by search" in out
        out, _ = run("text_index", "--drop")
        assert "Dropped 1 range(s)." in out and "Text index: none" in out
        hits = editor_client.get("/articles/?q=" + OTHER[2:9]).context["rows"]
        assert [a.body for a in hits] == [OTHER]  # read from the text itself
        settings.DEDUP_TEXT_INDEX_ROWS = 0  # none built: the next chunk builds nothing
        more = services.articles_ingest(rows=[{"title": "又一篇", "text": OTHER + "又及。"}])
        services.articles_process(article_ids=[a.pk for a in more])
        assert text_ranges() == []
        out, _ = run("text_index", "--create")
        assert f"Text index: 1 range(s) up to article {more[0].pk}" in out
        hits = editor_client.get("/articles/?q=" + OTHER[2:9]).context["rows"]
        assert sorted(a.pk for a in hits) == sorted([articles[2].pk, more[0].pk])
    finally:
        text_index_drop()
