"""Fact keys (dedup.engine.facts.fact_keys): a notice copied into a page is found by the
numbers it states, where its passage key is its template's, which a hundred siblings hold."""

from __future__ import annotations

import random

import numpy as np

from dedup.engine.boilerplate import passage_owners_of
from dedup.engine.popular import MAX_PASSAGE_OWNERS
from dedup.engine.verify import Detector
from tests.texts import stranger

STREETS = ["Elm Road", "Park Avenue", "High Street", "Station Road", "Church Lane", "Mill Way"]


def notice(seed: int) -> str:
    """Return a water notice: one template, other facts (streets, date, hours, phone)."""
    rng = random.Random(seed)
    street, near, far = rng.sample(STREETS, 3)
    day, month, year = rng.randint(1, 28), rng.randint(1, 12), rng.randint(2015, 2024)
    start = rng.randint(6, 11)
    return (
        f"Notice of temporary water supply interruption on {street}\n"
        f"Due to mains repairs, the city water company will carry out a temporary water "
        f"supply interruption on {street} between {near} and {far} on {day}/{month}/{year} "
        f"from {start}:00 to {start + rng.randint(2, 9)}:00. Residents are advised to make "
        "arrangements in advance. We apologise for any inconvenience.\n"
        f"Enquiries: {rng.randint(200, 999)}-{rng.randint(1000000, 9999999)}"
    )


def page(body: str, seed: int) -> str:
    """Return a page of a site holding `body` between other text of its own."""
    return f"{stranger(seed, 6)}\n\n{body}\n\n{stranger(seed + 1, 6)}"


def siblings_and_copy(count: int = 40) -> tuple[list[str], int]:
    """Return `count` notices and a page copying the first whose passage keys its siblings
    hold (more than MAX_PASSAGE_OWNERS of them), and the number of that notice."""
    detector = Detector()
    for first in range(200):
        texts = [notice(first + n) for n in range(count)]
        features = [detector.features(t) for t in texts]
        owners = passage_owners_of(features)(features[0].passage_keys)
        if len(owners) and (owners > MAX_PASSAGE_OWNERS).all():
            return [*texts, page(texts[0], 1000)], 0
    raise AssertionError("no notice whose passage keys its siblings hold")


def test_a_copy_of_a_passage_has_its_fact_key_and_a_sibling_does_not():
    detector = Detector()
    original = detector.features(notice(3))
    copied = detector.features(page(notice(3), 50))
    sibling = detector.features(notice(4))
    assert len(original.fact_keys)
    assert np.isin(original.fact_keys, copied.fact_keys).all()
    assert not np.isin(original.fact_keys, sibling.fact_keys).any()


def test_a_passage_of_one_number_has_no_fact_key():
    detector = Detector()
    features = detector.features("Chapter 1\n" + stranger(5, 6))
    assert len(features.facts) and not len(features.fact_keys)


def test_a_notice_copied_into_a_page_is_a_candidate_and_a_partial_copy():
    texts, original = siblings_and_copy()
    detector = Detector()
    features = [detector.features(t) for t in texts]
    copy = len(texts) - 1
    assert (features[original].fingerprint ^ features[copy].fingerprint).bit_count() > 3
    candidates = {tuple(pair) for pair in detector.candidates(features).tolist()}
    assert (original, copy) in candidates
    found = {(d.a, d.b): d.kind for d in detector.duplicates(features)}
    assert found.get((original, copy)) == "partial"
    # Its siblings, other facts in the same words (the streets among them), are copies
    # neither of it nor of one another: a passage whose facts changed is no copied text.
    assert list(found) == [(original, copy)]


REPORT = (
    "Manchester weather for 10 Feb 2022\n"
    "The Manchester forecast office said at 14:00: showers during the day, overcast "
    "overnight. High 19°C, low 9°C, winds from the north-west at 54 km/h. Humidity 57%, air "
    "quality index 200.\n"
    "Outlook: Day 2: fog, 4 to 13°C\n"
    "Advice: temperatures will vary widely between morning and evening, so dress in layers. "
    "Drivers should allow extra time on wet roads."
)


def test_a_report_cut_otherwise_in_a_page_keeps_a_fact_key():
    # In the page each line is a paragraph: the heading joins the text before it, not the
    # forecast after it, and the forecast's passage states two numbers fewer.
    paragraphs = [stranger(8, 4), *REPORT.split("\n"), stranger(9, 4)]
    page = "<html><body>" + "".join(f"<p>{p}</p>\n" for p in paragraphs) + "</body></html>"
    detector = Detector()
    report, copied = detector.features(REPORT), detector.features(page)
    assert detector.passages(REPORT)[0].startswith("manchester weather for 10 feb 2022 the")
    assert not any(p.startswith("manchester weather") for p in detector.passages(page))
    assert np.isin(report.fact_keys, copied.fact_keys).any()


def test_a_word_edited_next_to_a_number_keeps_a_fact_key():
    detector = Detector()
    report = detector.features(REPORT)
    edited = detector.features(REPORT.replace("10 Feb 2022", "10 February 2022"))
    assert np.isin(report.fact_keys, edited.fact_keys).any()
