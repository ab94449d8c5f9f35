"""The admin's verification bars (Settings.near, near_short, partial), applied to the stored
matches as they are shown: raising one hides the matches under it at once, lowering it back
shows them again. Matches stay stored; a bar lowered under the one they were verified at
shows no more than was stored (articles processed from then on, or a rebuild, find more)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dedup.engine.facts import SHORT
from dedup.engine.verify import EXCERPT_CHARS, EXCERPT_SHARE

# Verification tells a short pair by its shorter article's normalised characters, separators
# left out; what is at hand for every match is Article.length, the body's characters (more).
# A pair whose shorter body is under MAYBE_SHORT characters may have been judged short, so it
# keeps the near_short bar: a bar never hides a match that passed verification under the same
# settings (a text would need half its characters to be separators or markup).
MAYBE_SHORT = 2 * SHORT


@dataclass(frozen=True)
class Floor:
    """The least similarity a stored match needs now, per kind, from the settings; the
    editor's bars (clusterings.Bars) only raise it. All zeros: no admin bar (tests)."""

    near: float = 0.0
    near_short: float = 0.0
    partial: float = 0.0
    min_chars: int = 0

    @classmethod
    def of(cls, settings) -> Floor:
        return cls(
            float(settings.near),
            float(settings.near_short),
            float(settings.partial),
            int(settings.partial_min_chars),
        )

    def near_bar(self, shorter_length):
        """Return the bar of near copies whose shorter article has these characters."""
        return np.where(np.asarray(shorter_length) < MAYBE_SHORT, self.near_short, self.near)

    def partial_bar(self, shared_chars):
        """Return the bar of partial copies sharing these characters: a long excerpt (
        EXCERPT_CHARS times min_chars) passes at EXCERPT_SHARE of it, as verification says."""
        excerpt = np.asarray(shared_chars) >= EXCERPT_CHARS * self.min_chars
        return np.where(excerpt, EXCERPT_SHARE * self.partial, self.partial)


SQL = "SELECT near, near_short, partial, partial_min_chars FROM dedup_settings WHERE id = 1"
