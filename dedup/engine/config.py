"""The fingerprinting configuration: one immutable value with a stable version string."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field

# Bump when the fingerprint computed for the same text and configuration changes.
ALGORITHM = 1

TOKENIZERS = ("rjieba", "jieba")
TF_MODES = ("raw", "log")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ConfigError(ValueError):
    """A configuration value is out of range; the message says which and what is allowed."""


@dataclass(frozen=True)
class Config:
    """How text becomes a fingerprint.

    Every field changes fingerprints, so every field is part of `version`.
    """

    tokenizer: str = "rjieba"
    # Defaults chosen by bench/quality.py (docs/benchmarks.md, "Quality of the fingerprint").
    top_n: int = 256
    tf: str = "raw"
    strip_html: bool = True
    nfkc: bool = True
    casefold: bool = True
    fold_traditional: bool = True
    fold_punctuation: bool = True
    seed: int = 0
    extra_stop_words: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.tokenizer not in TOKENIZERS:
            raise ConfigError(
                f"tokenizer must be one of {', '.join(TOKENIZERS)}, not {self.tokenizer!r}"
            )
        if not _is_int(self.top_n) or not 1 <= self.top_n <= 10_000:
            raise ConfigError(f"top_n must be an integer from 1 to 10000, not {self.top_n!r}")
        if self.tf not in TF_MODES:
            raise ConfigError(f"tf must be one of {', '.join(TF_MODES)}, not {self.tf!r}")
        if not _is_int(self.seed) or not 0 <= self.seed < 2**32:
            raise ConfigError(f"seed must be an integer from 0 to 2**32 - 1, not {self.seed!r}")
        if isinstance(self.extra_stop_words, str):
            raise ConfigError("extra_stop_words must be a list of words, not one string")
        # Normalise the stop words so that equal sets give equal configurations and versions.
        words = tuple(sorted({w.strip().casefold() for w in self.extra_stop_words if w.strip()}))
        object.__setattr__(self, "extra_stop_words", words)

    @property
    def version(self) -> str:
        """Return a short, stable string that changes whenever fingerprints would change."""
        flags = "".join(
            letter
            for letter, on in (
                ("h", self.strip_html),
                ("k", self.nfkc),
                ("c", self.casefold),
                ("t", self.fold_traditional),
                ("p", self.fold_punctuation),
            )
            if on
        )
        stop = ""
        if self.extra_stop_words:
            digest = hashlib.sha256("\n".join(self.extra_stop_words).encode()).hexdigest()
            stop = f"-sw{digest[:8]}"
        return (
            f"sh{ALGORITHM}-{self.tokenizer}-n{self.top_n}-tf{self.tf}-{flags or 'none'}"
            f"-s{self.seed}{stop}"
        )

    def replace(self, **changes: object) -> Config:
        """Return a copy with some fields changed (validated like a new one)."""
        return Config(**{**asdict(self), **changes})
