"""The mail corpus of bench/corpora.py: mailing-list threads built from real English text.

Every list appends its footer, most senders a signature. A reply quotes its parent with "> ":
briefly (one sentence of 100 characters or less: a negative), or substantially (40% of the
parent's own body and 200 characters or more: a partial copy of the parent, "embedded" when the
whole body is quoted, else "excerpt"). A message is quoted substantially by one reply at most,
and a copy is never quoted substantially itself, so families stay coherent: every doc of a
family holds text of its original. Forwards and cross-posts of a message, and the re-sends of a
chain letter, are near copies. Every message that got no copy is a hard negative
("shared_boilerplate"): it shares a footer, a signature, a subject or a short quote only.
"""

from __future__ import annotations

import random
import re
import textwrap
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from bench.corpora_parts import NEAR_MIN, Assembler, Dispenser, excerpt, keeps, prose
from bench.corpus import Corpus
from bench.textpool import english_pool, pool_split

_LISTS = (
    ("python-users", "tech"),
    ("debian-user", "tech"),
    ("django-dev", "tech"),
    ("linux-admin", "tech"),
    ("tools-discuss", "tech"),
    ("insurance-talk", "chat"),
    ("homeowners", "chat"),
    ("benefits-help", "chat"),
)
_FIRST = ("Alice", "Bob", "Carol", "David", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy")
_FIRST += ("Karl", "Lena", "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent")
_LAST = ("Smith", "Chen", "Garcia", "Novak", "Okafor", "Larsen", "Tanaka", "Rossi", "Dubois")
_TITLES = ("Senior Engineer", "Release Manager", "Support Lead", "Insurance Broker", "Sysadmin")
_COMPANIES = ("Example Corp", "Acme Systems", "Northwind", "Globex", "Initech", "Umbrella Mutual")
_FORWARD_NOTES = (
    "FYI, this came up on another list.",
    "Forwarding this in case it is useful here.",
    "Thought this thread might interest people here.",
)
_CHAIN_NOTES = (
    "Please pass this on to everyone you know!!",
    "Got this from my cousin, thought you all should see it.",
    "Read this before you renew your policy. Forward to your friends.",
)


@dataclass(frozen=True)
class _Sender:
    name: str
    email: str
    signature: str


@dataclass
class _Msg:
    fid: str
    sender: _Sender
    mlist: str
    subject: str
    moment: datetime
    body: str  # the message's own text, wrapped
    plain: str = ""  # ... and as it came, one paragraph a line
    text: str = ""
    family: str = ""  # the family of the message it copies, if it is a copy
    kind: str = "original"
    shared: tuple[str, ...] = ()
    quoted: bool = False  # quoted substantially (or forwarded) already
    copies: list[str] = field(default_factory=list)


def _senders(rng: random.Random) -> list[_Sender]:
    out = []
    for first in _FIRST:
        for last in rng.sample(_LAST, 3):
            domain = rng.choice(("example.org", "mail.example.com", "example.net"))
            email = f"{first.lower()}.{last.lower()}@{domain}"
            style = rng.randrange(4)
            if style == 0:
                sig = ""
            elif style == 1:
                sig = f"-- \n{first} {last}"
            elif style == 2:
                sig = f"Cheers,\n{first}"
            else:
                sig = f"-- \n{first} {last}\n{rng.choice(_TITLES)}, {rng.choice(_COMPANIES)}"
            out.append(_Sender(f"{first} {last}", email, sig))
    return out


def _footer(mlist: str) -> str:
    return (
        "_______________________________________________\n"
        f"{mlist} mailing list\n{mlist}@lists.example.org\n"
        f"https://lists.example.org/listinfo/{mlist}"
    )


def _date(rng: random.Random, after: datetime | None = None) -> datetime:
    """Return a moment in 2009-2025, or minutes to a day and a half `after` another."""
    if after is not None:
        return after + timedelta(minutes=rng.randint(3, 2000), seconds=rng.randint(0, 59))
    start = datetime(2009, 1, 1, tzinfo=UTC)
    return start + timedelta(seconds=rng.randrange(16 * 365 * 86400))


def _wrap(text: str) -> str:
    """Wrap prose paragraphs at 72 columns, blank lines between them; code stays as it is."""
    paras = []
    for para in re.split(r"\n\s*\n", text):
        if not para.strip():
            continue
        if "  " in para or para.lstrip().startswith((">>>", "$", "#")):
            paras.append(para)
        else:
            paras.append("\n".join(textwrap.wrap(para, 72, break_long_words=False)))
    return "\n\n".join(paras)


def _quote(text: str) -> str:
    return "\n".join(("> " + line) if line.strip() else ">" for line in text.split("\n"))


def _render(m: _Msg, parts: list[str]) -> str:
    head = f"From: {m.sender.name} <{m.sender.email}>\nTo: {m.mlist}@lists.example.org\n"
    head += f"Subject: {m.subject}\nDate: {format_datetime(m.moment)}\n"
    tail = [m.sender.signature] if m.sender.signature else []
    return "\n\n".join([head.rstrip(), *parts, *tail, _footer(m.mlist)])


def _subject(body: str) -> str:
    words = re.sub(r"\s+", " ", body).split(" ")[: random.Random(body).randint(3, 7)]
    return " ".join(words).strip(" .,:;") or "question"


def _short_quote(body: str, rng: random.Random) -> str:
    """Return one sentence of `body` of 100 characters or less, or its first words."""
    sents = [s.strip() for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", body))]
    short = [s for s in sents if 20 <= len(s) <= 100]
    if short:
        return rng.choice(short)
    return textwrap.shorten(sents[0], 90, placeholder=" ...")


def mail(*, seed: int, split: str, size: int) -> Corpus:
    """Mailing-list threads: quoted replies, forwards, cross-posts, chain letters, negatives."""
    rng = random.Random(f"mail/{seed}/{split}")
    pool = pool_split(english_pool(), split)
    pools = {
        "chat": Dispenser([p for p in pool if p.origin == "insuranceqa-en"], rng),
        "tech": Dispenser(
            [p for p in pool if p.origin != "insuranceqa-en" and prose(p.text, 2)], rng
        ),
    }
    asm = Assembler("mail")
    senders = _senders(rng)
    members = {name: rng.sample(senders, 24) for name, _ in _LISTS}
    msgs: list[_Msg] = []

    def new(mlist: str, sender: _Sender, subject: str, after: _Msg | None = None) -> _Msg | None:
        lo, hi = (150, 900) if after else rng.choice(((150, 900), (300, 1800), (1200, 3000)))
        text = ""
        while len(text) < 150:
            piece = pools[dict(_LISTS)[mlist]].body(lo, hi)
            if piece is None:
                return None
            asm.use(piece)
            # Prose lines only: a mail quotes no grammar rules or tables.
            text = "\n".join(line for line in piece.text.split("\n") if prose(line, 1))
        moment = _date(rng, after.moment if after else None)
        m = _Msg(f"mail-{len(msgs):05d}", sender, mlist, subject, moment, _wrap(text), text)
        msgs.append(m)
        return m

    threads = 0
    while len(msgs) < size:
        mlist = rng.choice(_LISTS)[0]
        root = new(mlist, rng.choice(members[mlist]), "")
        if root is None:
            break
        threads += 1
        root.subject = f"[{mlist}] {_subject(root.body)}"
        root.text = _render(root, [root.body])
        thread = [root]
        for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 3, 4, 5))):
            parent = rng.choice(thread[-3:])
            subject = "Re: " + parent.subject.removeprefix("Re: ")
            m = new(mlist, rng.choice(members[mlist]), subject, parent)
            if m is None:
                break
            thread.append(m)
            _reply(m, parent, rng)
        if rng.random() < 0.12:
            _forward(rng.choice([x for x in thread if not x.family]), msgs, members, rng)
        if rng.random() < 0.04:
            _chain(root, msgs, members, rng)
    return _assemble(asm, msgs, threads)


def _reply(m: _Msg, parent: _Msg, rng: random.Random) -> None:
    """Write reply `m` to `parent`: a substantial quote (a copy), a short one, or none."""
    when = format_datetime(parent.moment)
    attribution = f"On {when}, {parent.sender.name} <{parent.sender.email}> wrote:"
    free = not parent.family and not parent.quoted
    style = rng.random()
    if free and len(parent.body) >= 200 and style < 0.35:
        quote = parent.body if style < 0.15 else excerpt(parent.plain, rng)
        if quote:
            parent.quoted = True
            m.family = parent.fid
            m.kind = "embedded" if quote == parent.body else "excerpt"
            m.shared = tuple(parent.body.split("\n\n")) if m.kind == "embedded" else (quote,)
            quoted = attribution + "\n" + _quote(_wrap(quote))
            # Mostly the answer below the quote; some top-post it above.
            parts = [quoted, m.body] if rng.random() < 0.7 else [m.body, quoted]
            m.text = _render(m, parts)
            return
    if style < 0.75:
        m.text = _render(m, [attribution + "\n" + _quote(_short_quote(parent.body, rng)), m.body])
    else:
        m.text = _render(m, [m.body])


def _forward(m: _Msg, msgs: list[_Msg], members, rng: random.Random) -> None:
    """Forward `m` to another list (near copy), or cross-post it there unchanged."""
    other = rng.choice([name for name, _ in _LISTS if name != m.mlist])
    m.quoted = True
    if rng.random() < 0.5:
        sender = rng.choice(members[other])
        inner = (
            "---------- Forwarded message ---------\n"
            f"From: {m.sender.name} <{m.sender.email}>\nDate: {format_datetime(m.moment)}\n"
            f"Subject: {m.subject}\nTo: {m.mlist}@lists.example.org\n\n{m.body}"
        )
        if m.sender.signature:
            inner += "\n\n" + m.sender.signature
        f = _Msg(f"{m.fid}f", sender, other, "Fwd: " + m.subject, _date(rng, m.moment), m.body)
        f.text = _render(f, [rng.choice(_FORWARD_NOTES), inner])
        f.family, f.kind = m.fid, "forward"
    else:
        f = _Msg(f"{m.fid}x", m.sender, other, m.subject, m.moment, m.body)
        f.text = _render(f, [m.body])
        f.family, f.kind = m.fid, "crosspost"
    msgs.append(f)


def _chain(root: _Msg, msgs: list[_Msg], members, rng: random.Random) -> None:
    """Re-send `root` as a chain letter: two or three resends with a plea on top."""
    root.quoted = True
    body = root.body
    for k in range(rng.randint(2, 3)):
        mlist = rng.choice(_LISTS)[0]
        sender = rng.choice(members[mlist])
        subject = "FW: " * (k + 1) + root.subject
        c = _Msg(f"{root.fid}c{k}", sender, mlist, subject, _date(rng, root.moment), body)
        quoted = _quote(body) if k else body
        c.text = _render(c, [rng.choice(_CHAIN_NOTES), quoted])
        c.family, c.kind = root.fid, "chain"
        msgs.append(c)
        body = quoted


def _assemble(asm: Assembler, msgs: list[_Msg], threads: int) -> Corpus:
    originals = {}
    copies = [m for m in msgs if m.family]
    with_copies = {m.family for m in copies}
    dropped = 0
    for m in msgs:
        if m.family:
            continue
        if m.fid in with_copies:
            originals[m.fid] = asm.original(m.fid, m.text)
        else:
            asm.negative(m.fid, "shared_boilerplate", m.text)
    for m in copies:
        orig = originals[m.family]
        if m.kind in ("forward", "crosspost", "chain") and keeps(orig.text, m.text) < NEAR_MIN:
            dropped += 1
            continue
        asm.copy(orig, m.kind, m.text, m.shared)
    return asm.finish(threads=threads, near_copies_left_out=dropped)
