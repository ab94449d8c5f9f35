"""Passage cuts that survive quoting: wrapped lines joined, list items marked."""

from __future__ import annotations

import textwrap

import pytest

from dedup.engine import Fingerprinter
from dedup.engine.verify import Detector

# A message's paragraph (Python's decimal documentation, as a mailing list quotes it).
PARAGRAPH = (
    "This occurs and signals clamped if the exponent of a result has been altered in order "
    "to fit the constraints of a specific concrete representation. This may occur when the "
    "exponent of a zero result would be outside the bounds of a representation, or when a "
    "large normal number would have an encoded exponent that cannot be represented. In this "
    "latter case, the exponent is reduced to fit and the corresponding number of zero digits "
    'are appended to the coefficient ("fold-down").'
)
# A reply's own text (Python's typing documentation).
ANSWER = (
    "Mark a protocol class as a runtime protocol. Such protocol can be used with isinstance() "
    "and issubclass(). Raise TypeError if applied to a non-protocol class. This allows a "
    "simple-minded structural check, very similar to one trick ponies in collections.abc such "
    "as Iterable. Warning: this will check only the presence of the required methods, not "
    "their type signatures! Protocol classes decorated with runtime_checkable act as "
    "simple-minded runtime protocols that check only the presence of given attributes, "
    "ignoring their type signatures."
)
# A Debian changelog entry, and a later entry of another package that carries its items over.
ENTRY = """\
llvm-toolchain-15 (1:15.0.5-2) unstable; urgency=medium

  [ Gianfranco Costamagna ]
  * Add libomp target library to mips64el (Closes: #1023101)
  * Explictly depend on spirv-14 for mips64el, to ease bootstrapping
    on buildds (this should be dropped once we build a spirv-15 in archive)
  * Cherry-pick two upstream patches to unblock mesa build on arm* (Closes:
    #1022577)

  [ Sylvestre Ledru ]
  * store the sccache results in /tmp/buildd/source/sccache-stats.json

 -- Gianfranco Costamagna <locutusofborg@debian.org>  Sat, 19 Nov 2022 23:25:04 +0100
"""
CARRIED = """\
libdatrie (0.2.12-1) unstable; urgency=medium

  * Add Depends: pkg-config to libdatrie-dev
  * Update package description as per upstream
  * New upstream version 0.2.12
  * Changes carried over from 1:15.0.5-2:
    * Add libomp target library to mips64el (Closes: #1023101)
    * Explictly depend on spirv-14 for mips64el, to ease bootstrapping
    on buildds (this should be dropped once we build a spirv-15 in archive)
    * Cherry-pick two upstream patches to unblock mesa build on arm* (Closes:

 -- Theppitak Karoonboonyanan <thep@debian.org>  Tue, 19 Jun 2018 14:11:14 +0700
"""


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector()


def quoted(text: str, width: int) -> str:
    return "\n".join("> " + line for line in textwrap.wrap(text, width))


@pytest.mark.parametrize("width", [40, 60, 72])
def test_a_paragraph_wrapped_at_other_widths_is_cut_at_its_sentences(detector, width):
    # A reply quotes the paragraph rewrapped: its passages and their keys are the original's.
    mine = detector.features(textwrap.fill(PARAGRAPH, 76))
    theirs = detector.features(quoted(PARAGRAPH, width))
    assert len(mine.passage_keys) == 3
    assert list(theirs.passage_keys) == list(mine.passage_keys)


def test_a_reply_quoting_part_of_a_message_is_a_partial_copy_however_it_rewraps(detector):
    part = PARAGRAPH[: PARAGRAPH.index(" In this latter")]  # its first two sentences
    for mine in (60, 72, 76):
        message = "Exponent of a 0 changed to fit bounds.\n" + textwrap.fill(PARAGRAPH, mine)
        for width in range(40, 80, 4):
            reply = (
                textwrap.fill(ANSWER, 72)
                + "\n\nOn Sun, 06 Sep 2015 21:43:07 +0000, Frank Garcia <frank@example.org> "
                + "wrote:\n"
                + quoted(part, width)
            )
            found = detector.duplicates([detector.features(message), detector.features(reply)])
            assert [(d.a, d.b, d.kind) for d in found] == [(0, 1, "partial")], (mine, width)


def test_list_items_quoted_under_another_entry_keep_their_passages(detector):
    mine, theirs = detector.passages(ENTRY), detector.passages(CARRIED)
    item = "explictly depend on spirv,14 for mips64el, to ease bootstrapping"
    assert [p for p in mine if item in p] == [p for p in theirs if item in p]
    found = detector.duplicates([detector.features(ENTRY), detector.features(CARRIED)])
    assert [(d.a, d.b, d.kind) for d in found] == [(0, 1, "partial")]


@pytest.mark.parametrize("text", [ENTRY, CARRIED, quoted(PARAGRAPH, 50), "* one item"], ids=str)
def test_marks_leave_the_fingerprint_as_the_fingerprinters(detector, text):
    fp, features = detector.fingerprint_and_features(text)
    assert fp == Fingerprinter().fingerprint(text)
    assert features.fingerprint == fp.value
