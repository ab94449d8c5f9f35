"""Reference answers the slow, obvious way (Python sets and dictionaries), for the tests."""

from __future__ import annotations


def passages_by_sets(fa, fb, of_a, of_b, shared) -> list[tuple[int, int]]:
    """Return the shared passages of two articles, every (mine, theirs) pair counted in
    dictionaries: of_a and of_b map a shingle to its passage; shared is the shared shingles."""
    # The smaller: fewer shingles, then fewer characters, then the first shingle that differs
    # (merge.first_is_smaller, the same whichever way round the pair is asked).
    if len(fa.shingles) != len(fb.shingles) or fa.length != fb.length:
        a_small = (len(fa.shingles), fa.length) < (len(fb.shingles), fb.length)
    else:
        a_small = fa.shingles.tolist() <= fb.shingles.tolist()
    mine, theirs = (of_a, of_b) if a_small else (of_b, of_a)
    sizes = (fa if a_small else fb).passage_sizes
    cells: dict[int, dict[int, int]] = {}
    for shingle in shared:
        row = cells.setdefault(mine[shingle], {})
        row[theirs[shingle]] = row.get(theirs[shingle], 0) + 1
    found = []
    for p, row in cells.items():
        if sum(row.values()) * 2 >= max(int(sizes[p]), 1):
            best = min(row, key=lambda q: (-row[q], q))
            found.append((p, best) if a_small else (best, p))
    return sorted(found)


def stars_by_a_loop(n: int, edges, rank) -> list[int]:
    """Return each node's centre the plain way: nodes in rank order, an unclaimed one becomes
    a centre and claims its unclaimed neighbours."""
    neighbours: dict[int, set[int]] = {}
    for a, b in edges:
        if a != b:
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
    centre = [-1] * n
    for x in sorted(range(n), key=lambda i: rank[i]):
        if centre[x] >= 0:
            continue
        centre[x] = x
        for y in neighbours.get(x, ()):
            if centre[y] < 0:
                centre[y] = x
    return centre
