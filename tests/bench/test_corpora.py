"""Tests for the labelled corpora of bench/corpora.py, built small."""

import dataclasses
import json

import pytest

from bench.corpora import CORPORA, NEGATIVE_KINDS, build, check, save_jsonl
from bench.corpus import PARTIAL_KINDS, Doc
from bench.textpool import normalise

SIZE = 200


@pytest.fixture(scope="module")
def halves():
    return {
        (name, split): build(name, seed=3, split=split, size=SIZE)
        for name in CORPORA
        for split in ("tune", "test")
    }


def _renamed(docs, prefix):
    """Give `docs` ids and families of their own, to check two corpora as one."""
    return [
        dataclasses.replace(d, id=f"{prefix}:{d.id}", family=f"{prefix}:{d.family}") for d in docs
    ]


@pytest.mark.parametrize("name", CORPORA)
def test_both_halves_pass_the_label_check(halves, name):
    for split in ("tune", "test"):
        docs = halves[name, split]
        assert len(docs) >= SIZE // 2
        assert check(docs) == []


@pytest.mark.parametrize("name", CORPORA)
def test_halves_share_no_source_text(halves, name):
    tune, test = halves[name, "tune"], halves[name, "test"]
    assert not set(tune.stats["keys"]) & set(test.stats["keys"])
    # No text of one half reappears in the other beyond boilerplate (footers, templates).
    assert check(_renamed(tune, "tune") + _renamed(test, "test")) == []


@pytest.mark.parametrize("name", CORPORA)
def test_every_corpus_has_originals_copies_and_hard_negatives(halves, name):
    kinds = {d.kind for d in halves[name, "test"]}
    assert "original" in kinds
    assert kinds & set(PARTIAL_KINDS)
    assert kinds & set(NEGATIVE_KINDS)
    assert {d.source for d in halves[name, "test"]} == {name}


def test_build_is_deterministic_and_the_seed_changes_the_edits(halves):
    again = build("reference_mixed", seed=3, split="tune", size=SIZE)
    assert list(again) == list(halves["reference_mixed", "tune"])
    other = build("reference_mixed", seed=4, split="tune", size=SIZE)
    assert [d.text for d in other] != [d.text for d in again]


def test_mail_reply_quoting_its_parent_is_in_the_parent_family(halves):
    docs = halves["mail", "tune"]
    originals = {d.family: d for d in docs if d.kind == "original"}
    replies = [d for d in docs if d.kind in ("excerpt", "embedded")]
    assert replies
    for reply in replies:
        assert "> " in reply.text
        assert sum(map(len, reply.shared)) >= 200
        parent = normalise(originals[reply.family].text)
        assert all(normalise(passage)[:40] in parent for passage in reply.shared)


def test_check_finds_a_shared_stretch_between_families_and_a_partial_copy_without_its_text():
    story = (
        "The committee met on Tuesday to review the harbour plan, which would widen the channel, "
        "rebuild the old pier and move the ferry terminal closer to the railway station. "
    )
    other = "Rain is expected over the weekend, with strong winds along the coast and inland. " * 3
    docs = [
        Doc("a/orig", story + other, "a", "original", "t", "140-500"),
        Doc("b/orig", "Unrelated opening words here. " + story, "b", "original", "t", "140-500"),
        Doc("a/excerpt", "Nothing of it at all. " * 12, "a", "excerpt", "t", "140-500", (story,)),
    ]
    problems = check(docs)
    assert any("a/orig and b/orig" in p and "share" in p for p in problems)
    assert any(p.startswith("a/excerpt: holds 0%") for p in problems)


def test_check_finds_a_hard_negative_with_company_and_a_wrong_band():
    docs = [
        Doc("x/orig", "Some text. " * 20, "x", "original", "t", "<140"),
        Doc("x/templated", "Other text. " * 20, "x", "templated", "t", "140-500"),
    ]
    problems = check(docs)
    assert any("hard negative shares its family" in p for p in problems)
    assert any("x/orig: band <140" in p for p in problems)


def test_save_jsonl_writes_one_labelled_doc_per_line(halves, tmp_path):
    docs = halves["templated", "test"][:5]
    path = tmp_path / "t.jsonl"
    save_jsonl(docs, path)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [d.id for d in docs]
    assert set(rows[0]) == {"id", "text", "family", "kind", "source", "band"}


def test_unknown_corpus_or_split_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="choose from news"):
        build("blogs", seed=1, split="tune")
    with pytest.raises(ValueError, match="'tune' or 'test'"):
        build("mail", seed=1, split="train")
