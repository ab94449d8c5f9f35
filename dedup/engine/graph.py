"""Connected components of a graph given as edge arrays, vectorised."""

from __future__ import annotations

import numpy as np


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return each of n nodes' component label: the least node index in its component.

    Union by minimum: every edge pulls both ends' labels down to the lesser one, then pointer
    jumping follows labels to their roots; repeated until no label changes.
    """
    labels = np.arange(n, dtype=np.int64)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if not len(a):
        return labels
    while True:
        low = np.minimum(labels[a], labels[b])
        before = labels.copy()
        np.minimum.at(labels, a, low)
        np.minimum.at(labels, b, low)
        while True:
            jumped = labels[labels]
            if np.array_equal(jumped, labels):
                break
            labels = jumped
        if np.array_equal(before, labels):
            return labels
