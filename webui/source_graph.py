"""The copy graph as SVG drawn on the server: sources on a circle (the most active at the
top, clockwise), an arrow from each original source to each source that copied it, its width
by the number of copies. Nothing is fetched at run time; the template escapes every label."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dedup.selectors.sources import Edge

SIZE = 640  # the drawing's width and height, in SVG units
NODES_MAX = 24  # more sources than this and the graph shows the most active ones
LINES_MAX = 150  # and the heaviest edges between them
RING = 0.36  # the circle's radius, a share of SIZE
LABEL_CHARS = 14


@dataclass
class Node:
    name: str
    label: str
    x: float
    y: float
    r: float
    copies: int  # copied and copying, together
    anchor: str
    lx: float = 0.0  # where the label goes
    ly: float = 0.0


@dataclass
class Line:
    original: str
    copier: str
    copies: int
    x1: float
    y1: float
    x2: float
    y2: float
    width: float


@dataclass
class Graph:
    nodes: list[Node]
    lines: list[Line]
    left_out: int  # sources not drawn
    size: int = SIZE


def _label(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"


def copy_graph(edges: list[Edge], nodes_max: int = NODES_MAX, sources: int = 0) -> Graph:
    """Lay out the edges' sources on a circle and the edges between the ones drawn; `sources`
    is how many there are in all (those not drawn are counted as left out)."""
    totals: dict[str, int] = {}
    for edge in edges:
        totals[edge.original] = totals.get(edge.original, 0) + edge.copies
        totals[edge.copier] = totals.get(edge.copier, 0) + edge.copies
    ranked = sorted(totals, key=lambda name: (-totals[name], name))
    shown = ranked[:nodes_max]
    if not shown:
        return Graph([], [], 0)
    top = max(totals[name] for name in shown)
    centre, ring = SIZE / 2, SIZE * RING
    nodes: dict[str, Node] = {}
    for i, name in enumerate(shown):
        angle = 2 * math.pi * i / len(shown) - math.pi / 2
        x, y = centre + ring * math.cos(angle), centre + ring * math.sin(angle)
        radius = 5 + 13 * math.sqrt(totals[name] / top)
        anchor = "start" if math.cos(angle) > 0.2 else "end" if math.cos(angle) < -0.2 else "middle"
        nodes[name] = Node(name, _label(name), x, y, radius, totals[name], anchor)
    drawn = [e for e in edges if e.original in nodes and e.copier in nodes]
    drawn = sorted(drawn, key=lambda e: -e.copies)[:LINES_MAX]
    most = max((e.copies for e in drawn), default=1)
    lines = []
    for edge in sorted(drawn, key=lambda e: e.copies):  # the heaviest on top
        a, b = nodes[edge.original], nodes[edge.copier]
        length = math.hypot(b.x - a.x, b.y - a.y) or 1.0
        ux, uy = (b.x - a.x) / length, (b.y - a.y) / length
        lines.append(
            Line(
                edge.original,
                edge.copier,
                edge.copies,
                round(a.x + ux * a.r, 1),
                round(a.y + uy * a.r, 1),
                round(b.x - ux * (b.r + 4), 1),  # the arrow's head stops at the copier's circle
                round(b.y - uy * (b.r + 4), 1),
                round(1 + 7 * math.log1p(edge.copies) / math.log1p(most), 1),
            )
        )
    for node in nodes.values():
        # Labels outside the circle, away from the centre.
        dx, dy = node.x - centre, node.y - centre
        norm = math.hypot(dx, dy) or 1.0
        node.x, node.y, node.r = round(node.x, 1), round(node.y, 1), round(node.r, 1)
        node.lx = round(node.x + dx / norm * (node.r + 6), 1)
        node.ly = round(node.y + dy / norm * (node.r + 6) + 4, 1)
    return Graph(list(nodes.values()), lines, max(sources, len(ranked)) - len(shown))
