"""bench/queue.py: the queue's pairs scored against the labels, and one small run through the
real service (PostgreSQL, Redis, a Celery worker)."""

import psycopg

from bench import queue
from bench.corpus import Doc
from bench.queue_report import Labels, doc_pairs, score, shares_text

STORY = "The quick brown fox jumps over the lazy dog near the riverbank every morning. " * 3


def _doc(family: str, kind: str, text: str) -> Doc:
    suffix = "orig" if kind == "original" else kind
    return Doc(f"{family}/{suffix}", text, family, kind, "test", "140-500")


def _corpora() -> dict:
    return {
        "a": [
            _doc("f1", "original", STORY),
            _doc("f1", "substitute", STORY.replace("fox", "cat")),
            _doc("f1", "excerpt", "Quoted: " + STORY[:100]),
            _doc("f2", "original", "Another article entirely, about rain in spring."),
            _doc("f3", "shared_boilerplate", "A page with the same footer as another page."),
        ],
        "b": [_doc("g1", "original", "Copied here: " + STORY)],
    }


def _read(pairs: list[tuple[str, str, str, str, str]]) -> dict:
    """A service read of the corpora, article ids 1.. in corpus order, with these pairs."""
    articles = [
        (i, name, d.id)
        for i, (name, d) in enumerate(
            ((name, d) for name, docs in _corpora().items() for d in docs), start=1
        )
    ]
    ids = {(name, ext): i for i, name, ext in articles}
    queue_pairs = [(ids[ca, a], ids[cb, b], kind) for ca, a, cb, b, kind in pairs]
    return {"articles": articles, "queue": queue_pairs, "engine": []}


def test_score_counts_family_pairs_right_and_finds_labelled_copies():
    labels = Labels.of(_corpora())
    read = _read(
        [
            ("a", "f1/orig", "a", "f1/substitute", "near"),
            ("a", "f1/substitute", "a", "f1/excerpt", "partial"),  # one family: right
            ("a", "f2/orig", "a", "f3/shared_boilerplate", "partial"),  # a hard negative
            ("a", "f1/orig", "b", "g1/orig", "partial"),  # across corpora
        ]
    )
    inside = score(labels, doc_pairs(labels, read, "queue"), {"a"})
    assert inside["pairs"] == 3 and inside["false"] == 1
    assert (inside["shown"]["near"], inside["right"]["near"]) == (1, 1)
    assert (inside["shown"]["partial"], inside["right"]["partial"]) == (2, 1)
    assert inside["near"] == (1, 1)  # the substitute's pair with its original
    assert inside["partial"] == (0, 1)  # the excerpt reached only through the substitute
    assert inside["clustered"] == (2, 2)
    assert inside["negatives"] == (1, 1)
    everything = score(labels, doc_pairs(labels, read, "queue"), {"a", "b"})
    assert everything["pairs"] == 4 and everything["false"] == 2


def test_shares_text_needs_120_characters_held_verbatim():
    assert shares_text(STORY, "Copied here: " + STORY)
    assert not shares_text(STORY, "Quoted: " + STORY[:100])
    assert not shares_text(STORY, "Another article entirely, about rain in spring.")


def test_small_run_through_the_service_agrees_with_the_api(tmp_path, monkeypatch):
    # As run by hand, with DEBUG off: production settings, plain http redirected to https
    # (the tests' own settings turn that off).
    monkeypatch.setenv("DEDUP_HTTPS", "1")
    args = queue.parse(
        [
            "--size", "50", "--corpora", "mail", "--mode", "per-corpus",
            "--database", "dedup_bench_queue_test", "--redis", "redis://127.0.0.1:6379/10",
            "--api-sample", "30", "--timeout", "120", "--out", str(tmp_path / "queue.md"),
        ]
    )  # fmt: skip
    corpora, stages = queue.run(args)
    read = stages["mail"]
    assert len(read["articles"]) == len(corpora["mail"])
    assert set(read["statuses"]) <= {"done", "exact"}
    assert read["queue"], "the queue shows no pair at all"
    assert read["page_status"] == 200
    assert read["api_checked"] >= 20 and read["api_disagree"] == []
    lines = queue.report(corpora, stages)
    assert any(line.startswith("| mail | queue |") for line in lines)
    with psycopg.connect(f"{args.postgres}/postgres") as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_database WHERE datname = 'dedup_bench_queue_test_mail'"
        ).fetchone()[0]
    assert left == 0, "the run's database was not dropped"
