"""Tests for issue 29's held-out corpora (bench/heldout_corpora.py), built tiny: the labels
pass bench.corpora's own check and the template, stock and repost truths hold."""

from collections import Counter

import numpy as np
import pytest

from bench.corpora import NEGATIVE_KINDS, check
from bench.heldout import cli_clusters, scores
from bench.heldout_corpora import HELDOUT, POPULAR, STOCK_USES, build
from bench.heldout_manuals import TEMPLATE_PAGES, _named_sentences
from bench.queue_report import Labels
from bench.textpool import normalise

SIZE = 60


@pytest.fixture(scope="module")
def corpora():
    return {name: build(name, seed=2, size=SIZE) for name in HELDOUT}


@pytest.mark.parametrize("name", HELDOUT)
def test_labels_pass_the_corpora_check(corpora, name):
    docs = corpora[name]
    assert len(docs) >= SIZE // 2
    assert check(docs) == []
    assert not {d.kind for d in docs} & set(NEGATIVE_KINDS)
    copies = [d for d in docs if d.kind != "original"]
    assert copies and all(d.family != d.id for d in copies)


def test_manuals_template_is_held_by_pages_of_several_families(corpora):
    docs = corpora["manuals"]
    template = docs.stats["template"]
    assert template
    originals = [set(_named_sentences(d.text)) for d in docs if d.kind == "original"]
    for sentence in template[:20]:
        assert sum(sentence in held for held in originals) >= TEMPLATE_PAGES
    # A standard sentence with the page's own name in it is template all the same.
    assert any("pagename" in sentence for sentence in template)
    assert len({d.source for d in docs if d.kind == "original"}) >= 3  # several projects


def test_each_stock_paragraph_is_in_5_to_20_answers_of_different_families(corpora):
    docs = corpora["stock"]
    originals = [d for d in docs if d.kind == "original"]
    for paragraph in docs.stats["template"]:
        holders = [d for d in originals if paragraph in normalise(d.text)]
        assert len({d.family for d in holders}) == len(holders)
        last = paragraph == docs.stats["template"][-1]  # the corpus may end mid-answerer
        assert STOCK_USES[0] <= len(holders) <= STOCK_USES[1] or (last and holders)
        for d in holders:  # the rest of the answer is its own, longer than the paste
            assert len(normalise(d.text)) >= 1.8 * len(paragraph)  # (spaces counted when built)


def test_popular_story_is_reposted_and_quoted_by_other_stories(corpora):
    docs = corpora["stories"]
    reposts = Counter(d.family for d in docs if d.kind != "original")
    wanted = docs.stats["stories"]["story:0"]
    assert wanted == POPULAR  # the 50, whenever the corpus holds 51 docs or more
    assert reposts["story:0"] == wanted
    story = {normalise(d.text) for d in docs if d.id == "story:0/orig"}.pop()
    quotes = [d for d in docs if d.source == "quotes"]
    assert quotes and all(d.family.startswith("quote:") for d in quotes)
    text = {d.family: normalise(d.text) for d in docs if d.kind == "original"}
    stories = [t for f, t in text.items() if f.startswith("story:")]
    for d in quotes:
        own = normalise(d.text)
        held = [t for t in stories if any(own[i : i + 25] in t for i in range(len(own) - 24))]
        assert held, f"{d.id} quotes no story"
    assert story in stories


def test_builds_are_deterministic_and_seeds_differ():
    again = build("stock", seed=2, size=SIZE)
    assert [d.text for d in again] == [d.text for d in build("stock", seed=2, size=SIZE)]
    assert [d.text for d in build("stock", seed=3, size=SIZE)] != [d.text for d in again]


def test_scores_count_purity_over_pairs_inside_clusters(corpora):
    docs = corpora["stories"]
    labels = Labels.of({"stories": docs})
    truth = [(o, c, "near") for o, c, _ in labels.pairs]
    family = labels.family
    # Every labelled pair found, clusters by story: all right.
    by_family = {f: i for i, f in enumerate(dict.fromkeys(family))}
    cluster = np.array([by_family[f] for f in family])
    s = scores(labels, truth, cluster)
    assert s["R near"][0] + s["R partial"][0] == len(truth)
    assert s["purity"][0] == s["purity"][1] > 0
    assert s["reposts"] == (docs.stats["stories"]["story:0"],) * 2
    # One quote article joined to the popular story's cluster: its pairs inside are false.
    quote = next(i for i, d in enumerate(docs) if d.source == "quotes")
    original = family.index(("stories", "story:0"))
    cluster[quote] = cluster[original]
    s = scores(labels, [*truth, (original, quote, "partial")], cluster)
    size = int(np.sum(cluster == cluster[original]))
    assert s["purity"][1] - s["purity"][0] == size - 1
    assert s["P partial"][0] == s["P partial"][1] - 1


def test_cli_clusters_do_not_chain_two_stories_through_a_partial_link():
    # 0-1 near, 2-3 near, 1-2 a partial link carrying little: two clusters, not one.
    pairs = [(0, 1, "near", 0.9), (2, 3, "near", 0.9), (1, 2, "partial", 0.1)]
    cluster = cli_clusters(5, pairs)
    assert cluster[0] == cluster[1] != cluster[2] == cluster[3]
    assert cluster[4] == -1
