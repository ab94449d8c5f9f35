"""Bad input through the web upload form and the JSON API: each case, the message the user sees
and the good rows kept.

A file goes in through the form (as an editor's browser sends it) and is read by the service a
worker runs (`upload_process`); one zip bomb goes through a real worker, which must stay alive
and small. Each case prints its figures (state, rows kept, first message) with `pytest -s`.
"""

from __future__ import annotations

import codecs
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dedup import services
from dedup.models import ApiToken, Article, UploadBatch
from tests import roles
from tests.service.test_degraded import Web, free_port
from tests.texts import ARTICLE, NEAR, OTHER

pytestmark = pytest.mark.django_db

GOOD = [ARTICLE, NEAR, OTHER]


def jsonl(*rows: dict | str) -> bytes:
    """Return JSON Lines: a dict as JSON (escapes kept as escapes), a str as it is."""
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    return ("\n".join(lines) + "\n").encode()


def good_rows(*texts: str) -> list[dict]:
    return [{"title": f"好文章{i}", "text": text} for i, text in enumerate(texts or GOOD)]


def zipped(*members: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def bomb(name: str, size: int, fill: bytes = b" ") -> bytes:
    """Return a .zip holding `name`, `size` bytes of `fill` unpacked (a few KB packed)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("good.jsonl", jsonl(*good_rows()))
        with archive.open(name, "w", force_zip64=True) as member:
            block = fill * 2**20
            for _ in range(size // 2**20):
                member.write(block)
    return buffer.getvalue()


@pytest.fixture
def editor() -> User:
    return roles.user_in("editor", "ed", password="pw-ed-long-enough")


@pytest.fixture
def web(editor) -> Client:
    return roles.signed_in(editor)


@pytest.fixture
def api(editor) -> Client:
    key = ApiToken.issue(editor, name="tests")[1]
    return Client(headers={"authorization": f"Token {key}"})


def upload(web: Client, name: str, data: bytes) -> UploadBatch:
    """Upload a file through the form and read it as a worker does."""
    response = web.post(
        "/upload/", {"files": [SimpleUploadedFile(name, data)]}, headers={"accept": "text/html"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    batch = UploadBatch.objects.get()
    services.upload_process(upload_id=batch.pk)
    batch.refresh_from_db()
    return batch


def messages(batch: UploadBatch) -> str:
    return "\n".join([batch.message, *(e["message"] for e in batch.errors)])


def report(case: str, batch: UploadBatch) -> None:
    first = (batch.message or (batch.errors[0]["message"] if batch.errors else ""))[:160]
    print(f"\n{case}: {batch.state}, {batch.accepted} kept of {batch.total_rows}; {first}")


def bodies() -> list[str]:
    return list(Article.objects.order_by("row").values_list("body", flat=True))


# --- Uploads that keep their good rows --------------------------------------------------------
# (name, data, rows kept, words of the message on the refused rows)
KEPT = {
    "nul-in-body": (
        "a.jsonl",
        jsonl(*good_rows(ARTICLE), {"title": "t", "text": "坏\u0000行"}, *good_rows(NEAR)),
        2,
        ['a.jsonl:2: "body" holds a NUL character (U+0000) at character 2; remove it'],
    ),
    "nul-in-title-csv": (
        "a.csv",
        f'title,text\nok,"{ARTICLE}"\n"bad\x00title",body\nok2,"{NEAR}"\n'.encode(),
        2,
        ['a.csv:3: "title" holds a NUL character'],
    ),
    "lone-surrogate-in-body": (
        "a.jsonl",
        jsonl(*good_rows(ARTICLE), '{"title": "t", "text": "half \\ud800 a character"}'),
        1,
        ['a.jsonl:2: "body" holds a lone surrogate (U+D800) at character 6'],
    ),
    "lone-surrogate-in-each-field": (
        "a.jsonl",
        jsonl(
            *good_rows(ARTICLE),
            *(
                json.dumps({"text": NEAR, key: "x"}).replace('"x"', '"\\udfff"')
                for key in ("title", "source", "url", "id")
            ),
        ),
        1,
        [f'"{key}" holds a lone surrogate (U+DFFF)' for key in ("title", "source", "url", "id")],
    ),
    "nul-in-published-at": (
        "a.jsonl",
        jsonl(*good_rows(ARTICLE), {"text": NEAR, "published_at": "2024-01-01\u0000"}),
        1,
        ['"published_at" must be an ISO-8601 date'],
    ),
    "ragged-csv": (
        "a.csv",
        f'title,text,source\na,"{ARTICLE}",s\nb,only two\nc,"{NEAR}",s,extra\n'.encode(),
        1,
        ["a.csv:3: has 2 fields, the header has 3", "a.csv:4: has 4 fields, the header has 3"],
    ),
    "utf8-bom-csv": ("a.csv", f'\ufefftitle,text\na,"{ARTICLE}"\n'.encode(), 1, []),
    "huge-title": (
        "a.jsonl",
        jsonl(*good_rows(ARTICLE), {"title": "长" * 600, "text": NEAR}),
        1,
        ['"title" is 600 characters long, at most 500 fit'],
    ),
    "malformed-json-lines-among-good": (
        "a.jsonl",
        jsonl(
            *good_rows(ARTICLE),
            '{"title": "broken", "text": ',
            "[1, 2]",
            '"just a string"',
            "[" * 100_000,
            '{"text": ' + "1" * 5000 + "}",
            *good_rows(NEAR),
        ),
        2,
        [
            "a.jsonl:2: not valid JSON (Expecting value at column 1)",
            'a.jsonl:3: expected an object like {"title": ..., "text": ...}',
            "a.jsonl:5: nested too deeply to read",
            "a.jsonl:6: not readable JSON (a number of more than 4300 digits)",
        ],
    ),
    "wrong-types": (
        "a.jsonl",
        jsonl(
            *good_rows(ARTICLE),
            {"text": 5},
            {"text": NEAR, "title": ["a"]},
            {"text": NEAR, "published_at": 12},
            {"text": "   "},
            {"title": "no text"},
        ),
        1,
        [
            '"body" must be a string, not int',
            '"title" must be a string, not list',
            '"published_at" must be an ISO-8601 date or time like',
            '"body" is empty',
            'needs a "body" (or "text")',
        ],
    ),
    "not-utf8-line-among-good": (
        "a.jsonl",
        jsonl(*good_rows(ARTICLE)) + '{"text": "中文"}\n'.encode("gbk") + jsonl(*good_rows(NEAR)),
        2,
        ["a.jsonl:2: not UTF-8 (byte 0xd6 at column 11); save the file as UTF-8"],
    ),
    "zip-path-traversal": (
        "a.zip",
        zipped(("../../../../tmp/wt16-evil.txt", ARTICLE.encode()), ("/etc/x.txt", NEAR.encode())),
        2,
        [],
    ),
    "nested-zip": (
        "a.zip",
        zipped(("good.jsonl", jsonl(*good_rows())), ("inner.zip", zipped(("b.txt", b"x")))),
        3,
        ["a.zip/inner.zip: a .zip inside a .zip is not read; upload it on its own"],
    ),
    "hidden-member": (
        "a.zip",
        zipped(("good.txt", ARTICLE.encode()), (".notes.txt", NEAR.encode())),
        1,
        ["a.zip/.notes.txt: skipped: a hidden file (its name starts with '.'); rename it"],
    ),
    "binary-member": (
        "a.zip",
        zipped(("good.txt", ARTICLE.encode()), ("b.txt", bytes(range(128, 256)))),
        1,
        ["a.zip/b.txt: not UTF-8 (at byte 0); save the file as UTF-8"],
    ),
}


@pytest.mark.parametrize("case", list(KEPT))
def test_upload_with_bad_rows_keeps_good_rows_and_names_the_bad_ones(web, case):
    name, data, kept, words = KEPT[case]
    batch = upload(web, name, data)
    report(case, batch)
    assert batch.state == "processing"  # read; its articles wait for the workers
    assert (batch.accepted, Article.objects.count()) == (kept, kept)
    assert batch.rejected == batch.total_rows - kept
    for word in words:
        assert word in messages(batch)


def test_zip_path_traversal_writes_nothing_outside(web):
    target = Path("/tmp/wt16-evil.txt")
    target.unlink(missing_ok=True)
    upload(web, "a.zip", KEPT["zip-path-traversal"][1])
    assert not target.exists()
    titles = sorted(Article.objects.values_list("title", flat=True))
    assert titles == ["wt16-evil", "x"]


# --- Uploads nothing can be read from: failed, with what to do ----------------------------------
FAILED = {
    "binary": ("a.jsonl", bytes(range(256)) * 8, "none of the"),
    "binary-page": ("a.txt", b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "not UTF-8"),
    "utf16-csv": (
        "a.csv",
        codecs.BOM_UTF16_LE + f'title,text\na,"{ARTICLE}"\n'.encode("utf-16-le"),
        "a.csv: is UTF-16; save the file as UTF-8",
    ),
    "gbk-csv": (
        "a.csv",
        f'title,text\na,"{ARTICLE}"\n'.encode("gbk"),
        "save the file as UTF-8 (GBK and other encodings are not read)",
    ),
    "headerless-csv": (
        "a.csv",
        f'a,"{ARTICLE}"\nb,"{NEAR}"\n'.encode(),
        "a.csv: the first line must name the columns",
    ),
    "only-blank-lines": ("a.jsonl", b"\n\n  \n", "a.jsonl holds no articles"),
    "not-a-zip": ("a.zip", b"PK\x03\x04 not really", "a.zip: not a readable .zip"),
    "deep-json-array": ("a.json", b"[" * 100_000, "nested too deeply"),
}


@pytest.mark.parametrize("case", list(FAILED))
def test_unreadable_upload_fails_saying_what_to_do(web, case):
    name, data, words = FAILED[case]
    batch = upload(web, name, data)
    report(case, batch)
    assert batch.state == "failed" and batch.finished_at is not None
    assert words in batch.message
    assert not Article.objects.exists()


def test_empty_and_oversized_files_are_refused_by_the_form(web, settings):
    settings.DEDUP_MAX_UPLOAD_BYTES = 2**20
    for name, data, words in [
        ("empty.jsonl", b"", "empty.jsonl is empty: choose a file that holds articles."),
        ("big.jsonl", b"x" * (2**20 + 1), "big.jsonl is 1.0 MB, over the limit of 1 MB"),
    ]:
        response = web.post("/upload/", {"files": [SimpleUploadedFile(name, data)]})
        assert response.status_code == 400
        assert words in response.content.decode()
    assert not UploadBatch.objects.exists()


# --- Sizes: an over-size article is refused with its row and size, the rest kept ---------------


def test_article_over_the_limit_is_refused_with_its_row_and_size(web, settings):
    settings.DEDUP_MAX_ARTICLE_BYTES = 2**20
    big = "长" * 400_000  # 1.2 MB in UTF-8, 2.3 MB as JSON's escapes
    data = jsonl(*good_rows(ARTICLE), {"text": big}, *good_rows(NEAR))
    batch = upload(web, "a.jsonl", data)
    report("article-over-the-limit", batch)
    assert (batch.state, batch.accepted, batch.rejected) == ("processing", 2, 1)
    assert "a.jsonl:2: the line is 2.3 MB, over the limit of 1.0 MB per article" in messages(batch)


def test_csv_row_and_page_over_the_limit_are_refused(web, settings):
    settings.DEDUP_MAX_ARTICLE_BYTES = 2**20
    csv_data = f'title,text\na,"{ARTICLE}"\nb,"{"x" * (2**20 + 10)}"\nc,"{NEAR}"\n'.encode()
    data = zipped(("rows.csv", csv_data), ("page.txt", b"y" * (3 * 2**20)))
    batch = upload(web, "a.zip", data)
    report("row-and-page-over-the-limit", batch)
    assert (batch.accepted, batch.rejected) == (2, 2)
    assert "a.zip/rows.csv:3: the row is 1.0 MB, over the limit" in messages(batch)
    assert "a.zip/page.txt: the page is 3.0 MB, over the limit" in messages(batch)


def test_zip_bomb_stops_at_the_unpacked_limit_and_keeps_the_good_rows(web, settings):
    settings.DEDUP_MAX_UNPACKED_BYTES = 8 * 2**20
    data = bomb("zz-bomb.jsonl", 64 * 2**20)  # one 64 MB line of spaces
    assert len(data) < 200_000
    batch = upload(web, "bomb.zip", data)
    report("zip-bomb", batch)
    assert (batch.state, batch.accepted, batch.rejected) == ("processing", 3, 1)
    assert "bomb.zip/zz-bomb.jsonl: stopped here: the .zip unpacks to more than 8.0 MB" in (
        messages(batch)
    )


def test_a_json_array_over_its_limit_asks_for_json_lines(web, monkeypatch):
    from dedup import readers

    monkeypatch.setattr(readers, "MAX_JSON_ARRAY_BYTES", 1000)
    data = json.dumps(good_rows(ARTICLE * 3, NEAR * 3)).encode()
    batch = upload(web, "a.json", data)
    assert batch.state == "failed" and not Article.objects.exists()
    assert "a.json: a JSON array over 1 KB is not read; send JSON Lines" in batch.message


def test_an_error_no_retry_mends_fails_the_upload_instead_of_leaving_it_parsing(web, monkeypatch):
    from dedup import services, tasks

    web.post("/upload/", {"files": [SimpleUploadedFile("a.jsonl", jsonl(*good_rows()))]})
    batch = UploadBatch.objects.get()

    def broken(*, upload_id):
        UploadBatch.objects.filter(id=upload_id).update(state="parsing")
        raise KeyError("something unforeseen")

    monkeypatch.setattr(services, "upload_process", broken)
    with pytest.raises(KeyError):
        tasks.upload_process.run(upload_id=batch.pk)
    batch.refresh_from_db()
    assert batch.state == "failed" and batch.finished_at is not None
    assert batch.message.startswith("could not be read (KeyError: 'something unforeseen')")


def test_many_rows_in_one_upload_are_all_kept(web):
    rows = [{"title": f"t{i}", "text": f"{ARTICLE} 第{i}篇"} for i in range(10_000)]
    batch = upload(web, "many.jsonl", jsonl(*rows))
    assert (batch.state, batch.accepted, batch.rejected) == ("processing", 10_000, 0)


# --- The API: every refusal a 400 JSON answer, never an HTML 500 --------------------------------
API_CASES = {
    "nul-escaped-in-text": (
        json.dumps({"title": "t", "text": "坏\u0000"}).encode(),
        '"body" holds a NUL character',
    ),
    "raw-nul-byte": (b'{"title": "t", "text": "bad\x00"}', "The body is not valid JSON"),
    "lone-surrogate-in-title": (
        b'{"title": "\\ud83d", "text": "' + ARTICLE.encode() + b'"}',
        '"title" holds a lone surrogate (U+D83D)',
    ),
    "lone-surrogate-in-source": (
        b'[{"text": "ok"}, {"source": "\\udc00", "text": "x"}]',
        'articles[1]: "source" holds a lone surrogate',
    ),
    "deeply-nested": (b"[" * 100_000, "nested too deeply"),
    "deeply-nested-object": (b'{"a":' * 100_000, "nested too deeply"),
    "not-utf8": ('{"text": "中文"}'.encode("gbk"), "The body is not valid JSON"),
    "huge-integer": (b'{"text": ' + b"9" * 5000 + b"}", "The body is not valid JSON"),
    "wrong-type": (b'{"text": ["a"]}', '"body" must be a string, not list'),
    "empty": (b"", "The request has no body"),
    "too-many-rows": (
        json.dumps([{"text": f"第{i}篇"} for i in range(10_000)]).encode(),
        "10000 articles in one request; send at most 1000.",
    ),
}


@pytest.mark.parametrize("case", list(API_CASES))
def test_api_submit_refuses_bad_input_with_a_json_400(api, case):
    body, words = API_CASES[case]
    response = api.post("/api/articles", body, content_type="application/json")
    print(f"\n{case}: {response.status_code} {response.content[:160]!r}")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert words in response.json()["error"]
    assert not Article.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"text": "坏\u0000" + ARTICLE}).encode(),
        b'{"text": "\\ud800' + ARTICLE.encode() + b'"}',
        b"[" * 100_000,
    ],
)
def test_api_check_answers_json_whatever_the_text(api, body):
    response = api.post("/api/check", body, content_type="application/json")
    assert response["Content-Type"] == "application/json"
    assert response.status_code in (200, 400), response.content[:300]


def test_api_check_refuses_a_text_over_the_article_limit(api, settings):
    settings.DEDUP_MAX_ARTICLE_BYTES = 2**20
    body = json.dumps({"text": "长" * 400_000}, ensure_ascii=False).encode()
    response = api.post("/api/check", body, content_type="application/json")
    assert response.status_code == 400
    assert '"text" is 1.1 MB, over the limit of 1 MB per article' in response.json()["error"]


def test_api_file_upload_keeps_the_good_rows(api):
    data = jsonl(*good_rows(ARTICLE), {"text": "\u0000"}, *good_rows(NEAR))
    response = api.post("/api/uploads", {"file": SimpleUploadedFile("a.jsonl", data)})
    assert response.status_code == 202
    batch = services.upload_process(upload_id=response.json()["upload"])
    assert (batch.accepted, batch.rejected) == (2, 1)
    status = api.get(f"/api/uploads/{batch.pk}").json()
    assert status["errors"][0]["message"].startswith('a.jsonl:2: "body" holds a NUL character')


@pytest.mark.parametrize(
    ("address", "name"),
    [
        ("/api/articles?external_id=%00", "external_id"),
        ("/api/articles?source=%E6%97%A5%00", "source"),
        ("/api/articles?url=https://example.com/%00", "url"),
        ("/api/matches?source=%00", "source"),
        ("/api/decisions?verdict=duplicate&source=a%00b", "source"),
    ],
)
def test_a_nul_in_a_query_parameter_is_a_json_400_naming_it(api, address, name):
    response = api.get(address)
    print(f"\n{address}: {response.status_code} {response.content[:160]!r}")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json()["error"].startswith(f"{name}: must not hold the NUL character")
    assert response.json()["errors"][0]["field"] == name


def test_a_nul_in_a_pages_query_is_a_400_page(web):
    response = web.get("/articles/?q=%E6%96%B0%E9%97%BB%00")
    assert response.status_code == 400 and b"must not hold the NUL character" in response.content


@pytest.mark.parametrize(
    ("method", "address", "size", "words"),
    [
        ("POST", "/api/articles", 25 * 2**20, "over the limit of 20.0 MB"),
        ("POST", "/api/check", 25 * 2**20, "over the limit of 20.0 MB"),
        ("POST", "/api/uploads", 4 * 2**20, "over the limit of 1.0 MB per file"),
        ("POST", "/decisions/", 25 * 2**20, "over the limit of 20.0 MB"),
    ],
)
def test_a_body_over_the_limit_is_a_413_the_client_reads(web_server, method, address, size, words):
    """Through gunicorn, as clients meet it: the client sends the whole body before it reads
    the answer (a server closing on it mid-send is a broken pipe, not a 413)."""
    headers = {"Content-Type": "application/json", "Authorization": "Token abc"}
    headers["Accept-Language"] = "en"
    status, _headers, body = web_server.request(method, address, b"x" * size, **headers)
    print(f"\n{method} {address} with {size} bytes: {status} {body[:160]!r}")
    assert status == 413 and words in body.decode()


@pytest.fixture(scope="module")
def web_server(tmp_path_factory):
    """gunicorn on this checkout, its file limit 1 MB; no database (refused before one)."""
    web = Web(
        tmp_path_factory.mktemp("web"),
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{free_port()}/nothing",
        REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
        DEDUP_MAX_UPLOAD_MB="1",
    )
    yield web
    web.stop()


# --- A zip bomb through a real worker: it stays alive and small ---------------------------------


def _peak_rss_kb(pids: list[int]) -> int:
    peak = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]))
    return peak


def test_zip_bomb_leaves_the_worker_alive_and_small(worker_factory, wait_until, editor):
    worker = worker_factory(env_extra={"DEDUP_MAX_UNPACKED_MB": "300"})
    data = bomb("zz-bomb.txt", 600 * 2**20)  # 600 MB of spaces in one page, a few hundred KB
    batch = services.upload_create(file=SimpleUploadedFile("bomb.zip", data), name="bomb.zip")
    wait_until(
        lambda: UploadBatch.objects.get(pk=batch.pk).state in ("done", "failed"), timeout=120
    )
    batch.refresh_from_db()
    peak = _peak_rss_kb(worker.children())
    print(f"\nzip bomb via worker: {batch.state}, {batch.accepted} kept, peak {peak // 1024} MB")
    assert (batch.state, batch.accepted, batch.rejected) == ("done", 3, 1)
    assert "the page is 600.0 MB, over the limit of 2.0 MB per article" in messages(batch)
    assert worker.alive() and peak < 400 * 1024
