"""The command line: `python -m dedup fingerprint`, its input formats and its bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dedup.cli import EXIT_OK, EXIT_SKIPPED, EXIT_USAGE, content_hash, main
from dedup.engine import Config, Fingerprinter

NEWS = "新华社北京1月1日电 国家主席江泽民发表1998年新年讲话，回顾过去一年的成就，展望新的世纪。"
FARM = "农业部门今年将继续加大对粮食生产的支持力度，确保农民增收，稳定粮食播种面积。"


def run(capsys, *args: str) -> tuple[int, list[dict], str]:
    code = main(["fingerprint", *args])
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    return code, lines, captured.err


def expected(text: str) -> str:
    return Fingerprinter().fingerprint(text).hex


def write_jsonl(path: Path, *rows: object) -> Path:
    path.write_text(
        "".join(
            (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows
        ),
        encoding="utf-8",
    )
    return path


def test_jsonl_articles_get_fingerprints_in_input_order(tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", {"id": 2, "text": FARM}, {"id": "a", "text": NEWS})
    code, lines, err = run(capsys, "--input", str(source))
    assert code == EXIT_OK and err == ""
    assert [line["id"] for line in lines] == [2, "a"]
    assert [line["fingerprint"] for line in lines] == [expected(FARM), expected(NEWS)]
    assert all(line["status"] == "ok" and line["tokens"] > 5 for line in lines)
    assert {line["version"] for line in lines} == {Config().version}


def test_malformed_lines_are_reported_and_good_lines_still_fingerprinted(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_bytes(
        b'{"id": 1, "text": "' + NEWS.encode() + b'"}\n'
        b"not json at all\n"
        b"[1, 2]\n"
        b'{"text": "no id here"}\n'
        b'{"id": 5}\n'
        b'{"id": 6, "text": 42}\n'
        b'{"id": 7, "text": "\xff\xfe broken bytes"}\n'
        b"\n"
        b'{"id": 9, "text": "' + FARM.encode() + b'"}\n'
    )
    code, lines, err = run(capsys, "--input", str(source))
    assert code == EXIT_SKIPPED
    assert [line["id"] for line in lines] == [1, 9]
    assert lines[1]["fingerprint"] == expected(FARM)
    reports = err.splitlines()
    assert f"{source}:2: not valid JSON" in reports[0]
    assert f"{source}:3: expected an object" in reports[1]
    assert f'{source}:4: needs an "id"' in reports[2]
    assert f'{source}:5: needs a "text"' in reports[3]
    assert f'{source}:6: "text" must be a string' in reports[4]
    assert f"{source}:7: not UTF-8" in reports[5]
    assert all(line.endswith("skipped") for line in reports[:6])
    assert "6 row(s) skipped" in reports[-1]


def test_a_body_is_read_as_the_text_as_the_service_reads_it(tmp_path, capsys):
    # The API and uploads take "body" or "text": a file sent to both reads the same here.
    source = write_jsonl(tmp_path / "in.jsonl", {"id": 1, "body": NEWS}, {"id": 2, "body": 3})
    code, lines, err = run(capsys, "--input", str(source))
    assert [line["id"] for line in lines] == [1]
    assert lines[0]["fingerprint"] == expected(NEWS)
    assert code == EXIT_SKIPPED and f'{source}:2: "body" must be a string' in err
    table = tmp_path / "in.csv"
    table.write_text(f"id,title,body\nc1,a title,{FARM}\n", encoding="utf-8")
    code, lines, _ = run(capsys, "--input", str(table))
    assert code == EXIT_OK and lines[0]["fingerprint"] == expected(FARM)


def test_text_without_words_gets_a_status_and_no_fingerprint(tmp_path, capsys):
    source = write_jsonl(
        tmp_path / "in.jsonl",
        {"id": "empty", "text": ""},
        {"id": "numbers", "text": "１２３ 456 7.8%"},
        {"id": "junk", "text": "\x00\x01\x02\x03" * 20},
    )
    code, lines, _ = run(capsys, "-i", str(source))
    assert code == EXIT_OK  # nothing was skipped: every row has its answer
    assert [(line["status"], line["fingerprint"]) for line in lines] == [
        ("empty", None),
        ("no_words", None),
        ("binary", None),
    ]


def test_csv_with_quoted_multiline_text_and_a_bad_row(tmp_path, capsys):
    source = tmp_path / "in.csv"
    source.write_text(
        f'id,text\nn1,"{NEWS}\n第二段，仍是同一篇。"\nn2,{FARM},extra field\nn3,{FARM}\n',
        encoding="utf-8",
    )
    code, lines, err = run(capsys, "-i", str(source))
    assert code == EXIT_SKIPPED
    assert [line["id"] for line in lines] == ["n1", "n3"]
    assert lines[0]["fingerprint"] == expected(f"{NEWS}\n第二段，仍是同一篇。")
    assert f"{source}:4: has 3 fields, the header has 2; skipped" in err


def test_csv_without_text_column_is_refused_with_a_hint(tmp_path, capsys):
    source = tmp_path / "in.csv"
    source.write_text("id,content\n1,hello\n", encoding="utf-8")
    code, lines, err = run(capsys, "-i", str(source))
    assert code == EXIT_USAGE and lines == []
    assert "first line must name the columns" in err and "id, content" in err


def test_directory_of_text_and_html_files_uses_paths_as_ids(tmp_path, capsys):
    (tmp_path / "b").mkdir()
    (tmp_path / "a.txt").write_text(NEWS, encoding="utf-8")
    (tmp_path / "b" / "page.html").write_text(f"<html><body><p>{FARM}</p></body></html>")
    (tmp_path / "b" / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "notes.md").write_text("ignored", encoding="utf-8")
    code, lines, err = run(capsys, "-i", str(tmp_path))
    assert code == EXIT_SKIPPED
    assert [line["id"] for line in lines] == [
        str(tmp_path / "a.txt"),
        str(tmp_path / "b/page.html"),
    ]
    assert lines[1]["fingerprint"] == expected(FARM)  # markup stripped
    assert f"{tmp_path / 'b' / 'latin1.txt'}: not UTF-8" in err


def test_missing_input_is_a_usage_error(tmp_path, capsys):
    code, lines, err = run(capsys, "-i", str(tmp_path / "nope.jsonl"))
    assert code == EXIT_USAGE and lines == []
    assert "nope.jsonl: no such file or directory" in err


def test_two_jobs_give_the_same_output_as_one(tmp_path, capsys):
    rows = [{"id": i, "text": f"{NEWS if i % 2 else FARM} 第{i}号"} for i in range(150)]
    source = write_jsonl(tmp_path / "in.jsonl", *rows, "broken")
    one = run(capsys, "-i", str(source))
    two = run(capsys, "-i", str(source), "--jobs", "2")
    assert one == two
    assert one[0] == EXIT_SKIPPED and len(one[1]) == 150


def test_configuration_options_change_fingerprint_and_version(tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", {"id": 1, "text": NEWS})
    _, default, _ = run(capsys, "-i", str(source))
    _, seeded, _ = run(capsys, "-i", str(source), "--seed", "7", "--top-n", "8")
    assert seeded[0]["version"] == Config(seed=7, top_n=8).version != default[0]["version"]
    assert seeded[0]["fingerprint"] == Fingerprinter(Config(seed=7, top_n=8)).fingerprint(NEWS).hex


@pytest.mark.parametrize(
    ("stdin", "ids"),
    [
        (json.dumps({"id": "s1", "text": NEWS}, ensure_ascii=False) + "\n", ["s1"]),
        (f'id,text\ns2,"{FARM}"\n', ["s2"]),
    ],
)
def test_standard_input_is_read_as_jsonl_or_csv(stdin, ids):
    result = subprocess.run(
        [sys.executable, "-m", "dedup", "fingerprint", "--input", "-"],
        input=stdin.encode(),
        capture_output=True,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == EXIT_OK, result.stderr.decode()
    lines = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [line["id"] for line in lines] == ids
    # stderr is not a terminal here: no progress bar in the way
    assert result.stderr == b""


# --- pairs, clusters, plan ----------------------------------------------------------------------


def run_command(capsys, *args: str) -> tuple[int, list[dict], str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, [json.loads(line) for line in captured.out.splitlines()], captured.err


def fingerprint_rows(path: Path, values: dict[str, int | None]) -> Path:
    rows = [
        {"id": i, "fingerprint": None if v is None else f"{v:016x}", "status": "ok"}
        for i, v in values.items()
    ]
    return write_jsonl(path, *rows)


A = 0x0123456789ABCDEF
B = A ^ 0b111  # 3 bits from A
C = B ^ (0b111 << 40)  # 3 bits from B, 6 from A
FAR = ~A & (2**64 - 1)


def test_pairs_from_fingerprint_output_are_each_listed_once(tmp_path, capsys):
    source = fingerprint_rows(
        tmp_path / "fp.jsonl", {"a": A, "b": B, "c": C, "far": FAR, "none": None, "a2": A}
    )
    code, lines, _ = run_command(capsys, "pairs", "-i", str(source), "--max-distance", "3")
    assert code == EXIT_OK
    assert lines == [
        {"a": "a", "b": "b", "distance": 3},
        {"a": "a", "b": "a2", "distance": 0},
        {"a": "b", "b": "c", "distance": 3},
        {"a": "b", "b": "a2", "distance": 3},
    ]
    _, wider, _ = run_command(capsys, "pairs", "-i", str(source), "-k", "6")
    assert {"a": "a", "b": "c", "distance": 6} in wider and len(wider) == 6


def test_pairs_from_texts_find_a_lightly_edited_copy(tmp_path, capsys):
    edited = NEWS.replace("成就", "成果")
    source = write_jsonl(
        tmp_path / "in.jsonl",
        {"id": "news", "text": NEWS},
        {"id": "farm", "text": FARM},
        {"id": "copy", "text": "　" + NEWS.replace("，", ",")},  # width and punctuation only
        {"id": "edit", "text": edited},
    )
    code, lines, _ = run_command(capsys, "pairs", "-i", str(source), "-k", "12")
    assert code == EXIT_OK
    found = {(line["a"], line["b"]): line["distance"] for line in lines}
    assert found[("news", "copy")] == 0
    fp = Fingerprinter()
    expected_distance = (fp.fingerprint(NEWS).value ^ fp.fingerprint(edited).value).bit_count()
    assert found.get(("news", "edit")) == expected_distance
    assert not any("farm" in pair for pair in found)


def test_clusters_show_the_original_and_its_copies_not_a_chain(tmp_path, capsys):
    source = fingerprint_rows(tmp_path / "fp.jsonl", {"a": A, "far": FAR, "b": B, "c": C})
    code, lines, _ = run_command(capsys, "clusters", "-i", str(source), "-k", "3")
    assert code == EXIT_OK
    assert lines == [  # c is 3 from b but 6 from a: a copy of a copy, not of a's story
        {
            "original": "a",
            "size": 2,
            "members": [
                {"id": "a", "distance": 0, "linked_to": None, "linked_distance": 0},
                {"id": "b", "distance": 3, "linked_to": "a", "linked_distance": 3},
            ],
        }
    ]


def test_pairs_refuse_a_distance_out_of_range(tmp_path, capsys):
    source = fingerprint_rows(tmp_path / "fp.jsonl", {"a": A})
    code, lines, err = run_command(capsys, "pairs", "-i", str(source), "-k", "40")
    assert code == EXIT_USAGE and lines == []
    assert "--max-distance must be from 0 to 32" in err


def test_plan_explains_its_choice(capsys):
    assert main(["plan", "--n", "10000000000", "--k-max", "3"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "k_max=3: chose" in out and "| chosen" in out
    assert main(["plan", "--n", "1000000", "--k-max", "8", "--memory-gib", "0.01"]) == EXIT_USAGE
    assert "raise the budget or lower k_max" in capsys.readouterr().err


def test_duplicates_writes_verified_pairs_with_shared_passages(tmp_path, capsys):
    long_news = NEWS + FARM + "今年的经济工作要坚持稳中求进，深化改革，扩大开放，保持社会稳定。"
    edited = "首页 > 新闻\n" + long_news.replace("成就", "成果") + "\n相关文章：股市今日大涨。"
    other = (
        "城市交通拥堵问题需要综合治理，优先发展公共交通，完善地铁和公交线路的衔接。"
        "专家建议合理规划停车设施，鼓励市民绿色出行，减少私家车的使用频率。"
        "各地还应加快建设智能交通系统，利用数据分析优化信号灯配时，提高道路通行效率。"
        "与此同时，共享单车的规范管理也被提上日程，以解决乱停乱放带来的新问题。"
    )
    page = "导航：首页 国内 国际\n" + other + "\n" + long_news + "\n网友评论：" + other[::-1]
    source = write_jsonl(
        tmp_path / "in.jsonl",
        {"id": "news", "text": long_news},
        {"id": "other", "text": "学校今年秋季将新建两座实验楼，供物理和化学课程使用。"},
        {"id": "edited", "text": edited},
        {"id": "page", "text": page},
        {"id": "fp-only", "fingerprint": "0123456789abcdef"},
    )
    code, lines, err = run_command(capsys, "duplicates", "-i", str(source), "--with-text")
    assert code == EXIT_SKIPPED and "fp-only: has no text" in err
    found = {(line["a"], line["b"]): line for line in lines}
    assert set(found) == {("news", "edited"), ("news", "page"), ("edited", "page")}
    near = found["news", "edited"]
    assert near["kind"] == "near" and 0.4 <= near["similarity"] <= 1
    assert isinstance(near["distance"], int) and near["shared_passages"] == []
    partial = found["news", "page"]
    assert partial["kind"] == "partial" and partial["similarity"] == 1.0
    # All of the article's text is in the page, counted in its characters (separators aside).
    assert partial["shared_chars"] == sum(c.isalnum() for c in long_news)
    # Every passage of the article is shared, each with the page passage that holds it.
    shared = partial["shared_passages"]
    assert [a for a, _ in shared] == list(range(len(shared))) and len(shared) >= 3
    for article_passage, page_passage in partial["shared_text"]:
        assert article_passage in page_passage


def test_duplicates_reports_an_exact_copy_with_its_first_text_only(tmp_path, capsys):
    from dedup.models import Article

    news = NEWS + FARM + "今年的经济工作要坚持稳中求进，深化改革，扩大开放，保持社会稳定。"
    copy = "  " + news.replace(" ", "\n  ") + "\n"  # the same words, other whitespace
    edited = news.replace("成就", "成果")
    assert content_hash(copy) == content_hash(news) == Article.hash_body(news)
    source = write_jsonl(
        tmp_path / "in.jsonl",
        {"id": "news", "text": news},
        {"id": "edited", "text": edited},
        {"id": "copy", "text": copy},
    )
    code, lines, _ = run_command(capsys, "duplicates", "-i", str(source))
    assert code == EXIT_OK
    # As the service: the copy is an exact copy of the first text and is not compared again.
    assert [(line["a"], line["b"], line["kind"]) for line in lines] == [
        ("news", "edited", "near"),
        ("news", "copy", "exact"),
    ]
    assert (lines[1]["distance"], lines[1]["similarity"]) == (0, 1.0)


def test_duplicates_take_the_services_verification_settings(tmp_path, capsys):
    news = NEWS + FARM + "今年的经济工作要坚持稳中求进，深化改革，扩大开放，保持社会稳定。"
    source = write_jsonl(
        tmp_path / "in.jsonl",
        {"id": "news", "text": news},
        {"id": "edited", "text": news.replace("成就", "成果")},
    )
    _, lines, _ = run_command(capsys, "duplicates", "-i", str(source))
    similarity = lines[0]["similarity"]
    assert similarity < 1.0
    # Under 140 characters: near_short is the bar that applies.
    _, lines, _ = run_command(capsys, "duplicates", "-i", str(source), "--near", "0.999")
    assert [line["b"] for line in lines] == ["edited"]
    strict = ["--near-short", "0.999", "--partial", "0.999"]
    _, lines, _ = run_command(capsys, "duplicates", "-i", str(source), *strict)
    assert lines == []
    with pytest.raises(SystemExit) as exit_:
        main(["duplicates", "-i", str(source), "--partial", "1.5"])
    assert exit_.value.code == EXIT_USAGE
    assert "must be a number from 0 to 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["duplicates", "spark", "fingerprint"])
def test_help_shows_every_option_as_an_option(command, capsys):
    # The spark command shares duplicates' options: sharing them once took the option strings
    # off duplicates' own --input, --jobs and --with-text, shown as positional arguments.
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = capsys.readouterr().out
    assert "--input PATH" in shown.split("\n\n")[0]
    assert "positional arguments" not in shown
    assert ("[--with-text]" in shown) == (command == "duplicates")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("nosuch.jsonl", "--input {path}: no such file or directory"),
        ("articles.csv", "--input {path}: spark reads JSON Lines or Parquet"),
    ],
)
def test_spark_names_a_bad_input_before_starting(tmp_path, capsys, name, said):
    # A missing file was a Java stack trace of 78 lines; a CSV file, every line "not JSON".
    path = tmp_path / name
    if name.endswith(".csv"):
        path.write_text("id,text\na,some text\n", encoding="utf-8")
    code = main(["spark", "--input", str(path), "--output", str(tmp_path / "out")])
    assert code == EXIT_USAGE
    assert said.format(path=path) in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_broken_json_line_is_named_without_a_doubled_word(tmp_path, capsys):
    path = tmp_path / "a.jsonl"
    path.write_text('{"id": "a", "text": "cut off\n', encoding="utf-8")
    _, _, err = run(capsys, "-i", str(path))
    assert "(Invalid control character at column 29)" in err and "at at" not in err


def test_spark_summary_counts_in_words_and_a_slow_rate_in_tenths():
    from dedup.spark.job import Summary

    line = Summary(articles=20, skipped=1, pairs=3, clusters=1, seconds=121.7).describe()
    assert "(1 row skipped)" in line and "(0.2 articles/s)" in line
    line = Summary(articles=2000, skipped=2, pairs=3, clusters=1, seconds=10.0).describe()
    assert "(2 rows skipped)" in line and "(200 articles/s)" in line
