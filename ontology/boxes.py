"""Box geometry shared by the ingestion stages, structural recall and its bench.

A box is [x0, y0, x1, y1] in PDF points with a top-left origin (PyMuPDF's convention).
"""

from __future__ import annotations

from collections.abc import Sequence

Box = list[float]


def area(b: Sequence[float]) -> float:
    """Area of a box; 0 for an empty or inverted one."""
    return max(b[2] - b[0], 0.0) * max(b[3] - b[1], 0.0)


def inter(a: Sequence[float], b: Sequence[float]) -> float:
    """Area of the intersection of two boxes."""
    return area([max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])])


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union (0 when the boxes do not overlap or are both empty)."""
    i = inter(a, b)
    union = area(a) + area(b) - i
    return i / union if union > 0 else 0.0


def union(a: Sequence[float], b: Sequence[float]) -> Box:
    """The smallest box holding both."""
    return [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]


def h_overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether the boxes share some horizontal extent."""
    return min(a[2], b[2]) > max(a[0], b[0])
