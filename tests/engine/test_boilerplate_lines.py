"""A passage that is boilerplate in an article may hold no shingles of its own: a changelog's
sign-off line that the article holds first joined to a short line before it (where all its
grams are first seen), then alone, while other articles hold it alone (issue 32: this made
Boilerplate.shingles raise, and the service's whole chunk with it)."""

from __future__ import annotations

from dedup.engine.verify import Boilerplate, Detector, passage_owners_of

SIGN_OFF = "Signed-off-by: Jane Doe <jane.doe@example.org>"
RELEASES = [
    f"Release {i} of the parser fixes a crash on empty headers number {i} and makes reading long"
    f" files about {i} times faster than before in every case we tried.\n{SIGN_OFF}"
    for i in range(6)
]
SIGNED_TWICE = (
    "Fix the tokenizer for wide characters in names, which were cut in two where a name held"
    f" them.\nOK.\n{SIGN_OFF}\nAnother long change that rewrites the reader of compressed"
    f" archives so that nothing is read twice anymore.\n{SIGN_OFF}"
)


def test_a_boilerplate_passage_without_shingles_of_its_own_adds_none():
    detector = Detector()
    features = [detector.features(text) for text in [*RELEASES, SIGNED_TWICE]]
    signed = features[-1]
    # The case itself: the sign-off alone is the article's last passage, its shingles all seen
    # in the passage before, and boilerplate in it (six others hold it as a passage).
    assert signed.passage_sizes[-1] == 0
    boilerplate = Boilerplate(passage_owners_of(features))
    assert boilerplate.shingles(signed) == {}
    assert boilerplate.keys(features[0]) == frozenset([int(features[0].passage_keys[-1])])
    # The collection is judged, the twice-signed article with it.
    assert detector.duplicates(features) == []
