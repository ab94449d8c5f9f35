"""Mail headers and quote attributions are not evidence of a copy (the fingerprint reads them)."""

from __future__ import annotations

import pytest

from dedup.engine import Fingerprinter
from dedup.engine.spans import passage_spans
from dedup.engine.text import without_mail_headers
from dedup.engine.verify import Detector

PARENT_BODY = (
    "OAuth often seems complicated and difficult to implement. There are several prominent\n"
    "libraries for handling OAuth requests."
)
REPLY_BODY = (
    "It is also interesting for translators, because GNU gettext provides the msgmerge\n"
    "program, which prepares a message catalog before a translation update, and keeps\n"
    "the old translations as fuzzy entries so that nothing already done is lost."
)


def message(sender: str, date: str, subject: str, parts: list[str]) -> str:
    head = (
        f"From: {sender} <{sender.lower().replace(' ', '.')}@mail.example.com>\n"
        "To: python-users@lists.example.org\n"
        f"Subject: {subject}\nDate: {date}"
    )
    return "\n\n".join([head, *parts])


PARENT = message(
    "Trent Chen", "Fri, 15 Jul 2016 05:30:22 +0000", "[python-users] OAuth libraries", [PARENT_BODY]
)
# A reply that names its parent (sender, date, subject) and quotes one short sentence.
REPLY = message(
    "Mallory Novak",
    "Sat, 16 Jul 2016 03:41:29 +0000",
    "Re: [python-users] OAuth libraries",
    [
        "On Fri, 15 Jul 2016 05:30:22 +0000, Trent Chen <trent.chen@mail.example.com> wrote:\n"
        "> OAuth often seems complicated and difficult to implement.",
        REPLY_BODY,
    ],
)


@pytest.fixture(scope="module")
def detector():
    return Detector()


def test_header_block_and_attribution_are_blanked_lines_kept():
    own = without_mail_headers(REPLY)
    assert own is not None
    assert own.count("\n") == REPLY.count("\n")
    assert "Subject" not in own and "wrote:" not in own and "Trent Chen" not in own
    assert "> OAuth often seems" in own and REPLY_BODY in own


@pytest.mark.parametrize(
    "text",
    [
        "Note: keep the receipt.\nWarning: the offer ends today.\n\nThe shop opens at nine.",
        "Subject: one line alone\n\nThe body follows.",
        "新华社北京1月3日电\n\n来源：新华社\n作者：张三",
        "The meeting was on Friday. Date: the 15th, To: everyone.",
    ],
)
def test_text_without_a_mail_header_block_is_left_alone(text):
    assert without_mail_headers(text) is None


def test_forwarded_message_header_is_blanked():
    text = (
        "Worth a read.\n\n---------- Forwarded message ---------\n"
        "From: Trent Chen <trent@example.com>\nDate: Fri, 15 Jul 2016\n"
        "Subject: OAuth libraries\nTo: python-users@lists.example.org\n\n" + PARENT_BODY
    )
    own = without_mail_headers(text)
    assert own is not None and "Forwarded" not in own and "Trent" not in own
    assert own.startswith("Worth a read.") and own.endswith(PARENT_BODY)


def test_reply_naming_its_parent_is_not_a_copy(detector):
    # With its headers read, subject, sender, address and date made it a partial copy of
    # 0.61 of the parent (139 shared characters).
    fa, fb = detector.features(PARENT), detector.features(REPLY)
    assert detector.judge(0, 1, fa, fb) is None


def test_reply_quoting_the_whole_parent_is_a_copy(detector):
    body = PARENT_BODY + (
        "\nThey are hard to extend, and they hide what goes over the wire, so that\n"
        "when a provider answers with an error nobody can tell which request it was."
    )
    parent = message(
        "Trent Chen", "Fri, 15 Jul 2016 05:30:22 +0000", "[python-users] OAuth libraries", [body]
    )
    quoted = "\n".join("> " + line for line in body.split("\n"))
    reply = message(
        "Mallory Novak",
        "Sat, 16 Jul 2016 03:41:29 +0000",
        "Re: [python-users] OAuth libraries",
        ["On Fri, 15 Jul 2016, Trent Chen wrote:\n" + quoted, REPLY_BODY],
    )
    found = detector.judge(0, 1, detector.features(parent), detector.features(reply))
    assert found is not None and found.kind == "partial" and found.similarity > 0.8


def test_fingerprint_still_reads_the_headers(detector):
    fp, _ = detector.fingerprint_and_features(REPLY)
    assert fp.value == Fingerprinter().fingerprint(REPLY).value


def test_passages_leave_the_headers_out_and_spans_still_find_the_rest(detector):
    passages = detector.passages(REPLY)
    assert passages and not any("subject" in p or "wrote" in p for p in passages)
    spans = passage_spans(detector, REPLY)
    assert len(spans) == len(passages)
    shown = [REPLY[start:end] for start, end in spans]
    assert shown[0].startswith("OAuth often seems")
    assert any("msgmerge" in s for s in shown)
