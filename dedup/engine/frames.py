"""Site templates: the frame a site puts around its pages.

A site's pages share a header, a box of related links, a footer. Its footer, held by hundreds
of pages, is boilerplate (dedup.engine.boilerplate); a page template filled in for a handful
of pages (the same navigation and related links) is held by too few to be, yet it may be
half of a short page, and two pages of one template are no copy of each other: each has text
of its own, and what they share ends both, at the same place.

A pair's *frame* is the run of passages that ends both articles (the last passage of both,
the one before it in both, ...; boilerplate both hold goes on the run), each of them mostly
in its counterpart and held by at least FRAME_OWNERS articles (more than the pair: the
template used again; where the two are cut otherwise, each of them), when the smaller
article has text of its own besides what the two share (an article copied at the end of a
bigger page has none: all of it is shared, and the run is the copy): a passage not in the
other, or less than FRAME_CONTAINED of its text in the other (a page's own short paragraphs
joined into its frame's passages). A partial copy's evidence and containment leave the frame
out.

Only the run from the end: a run from the start is as often an excerpt of a story's first
paragraphs quoting it first (bench.trusted's news corpus lost excerpts to it) and the false
partial pairs of bench.trusted's site pages all end in their frame. Passage keys' holders are
counted as for boilerplate, so the same rule holds in the service (dedup.index.boilerplate):
the frame's keys are keys both articles hold, counted for the article verified.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dedup.engine.features import Features
from dedup.engine.merge import first_is_smaller

FRAME_OWNERS = 3
# A smaller article of which less than this share is in the other has text of its own, even
# where none of its passages is its own (chosen on bench.trusted's tune split: tech_en's false
# partials 51 -> 41 and 62 -> 49, reference_mixed's 26 -> 15 and 17 -> 7, no copy lost; at
# 0.8 a reply quoting a message's body without its first quoted line lost it).
FRAME_CONTAINED = 0.7


def frame_passages(
    fa: Features,
    fb: Features,
    passages: list[tuple[int, int]],
    owners: Callable[[np.ndarray], np.ndarray],
    in_a: np.ndarray | None,
    in_b: np.ndarray | None,
    containment: float = 1.0,
) -> set[int]:
    """Return the smaller article's passages that are the pair's frame (none if it has none),
    from `passages`, (a, b) pairs as from merge.partial_passages (boilerplate left out), and
    `in_a`, `in_b`: the passages of each that both hold as boilerplate (or None)."""
    if not passages:
        return set()
    small_is_a = first_is_smaller(fa, fb)
    small, big = (fa, fb) if small_is_a else (fb, fa)
    held_small, held_big = (in_a, in_b) if small_is_a else (in_b, in_a)
    partner = {p: q for p, q in passages} if small_is_a else {q: p for p, q in passages}
    n, m = len(small.passage_keys), len(big.passage_keys)
    run: list[int] = []
    for back in range(1, min(n, m) + 1):
        p, q = n - back, m - back
        if held_small is not None and held_small[p] and held_big[q]:
            continue  # boilerplate both hold, at the same place: the run goes on
        if partner.get(p) != q:
            break
        if small.passage_keys[p] != big.passage_keys[q]:
            # Cut otherwise (a page's last paragraph joined to the related links): the same
            # place still, where both passages are held by the template's pages.
            keys = np.array([small.passage_keys[p], big.passage_keys[q]], np.uint64)
            if owners(keys).min() < FRAME_OWNERS:
                break
        run.append(p)
    if not run:
        return set()
    counts = owners(small.passage_keys[run]).tolist()
    frame = {p for p, count in zip(run, counts, strict=True) if count >= FRAME_OWNERS}
    # A frame is around text of the smaller article's own, not all of it: passages of its
    # own, or much of its text not in the other (a page's own short paragraphs may be joined
    # into its frame's passages).
    own = small.passage_sizes > 0
    if held_small is not None:
        own &= ~held_small
    own[list(partner)] = False
    return frame if own.any() or containment < FRAME_CONTAINED else set()


def without_frame(
    fa: Features,
    fb: Features,
    passages: list[tuple[int, int]],
    containment: float,
    small_size: int,
    owners: Callable[[np.ndarray], np.ndarray],
    in_a: np.ndarray | None,
    in_b: np.ndarray | None,
) -> tuple[list[tuple[int, int]], float]:
    """Return a partial copy's shared passages and the smaller article's containment (of its
    `small_size` shingles, boilerplate aside) with the pair's frame left out of both."""
    frame = frame_passages(fa, fb, passages, owners, in_a, in_b, containment)
    if not frame:
        return passages, containment
    small_is_a = first_is_smaller(fa, fb)
    small = fa if small_is_a else fb
    framed = int(small.passage_sizes[list(frame)].sum())
    rest = small_size - framed
    containment = (containment * small_size - framed) / rest if rest > 0 else 0.0
    side = 0 if small_is_a else 1
    return [pq for pq in passages if pq[side] not in frame], containment
