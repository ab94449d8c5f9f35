"""The compiled module `dedup.engine._native`, when it is built and wanted, and the constants
its code shares with the numpy code that does the same work without it.

Set DEDUP_NO_NATIVE=1 to run on numpy alone, as on a machine without a C compiler (CI runs the
engine's tests both ways). A build whose constants differ from these (a stale build after a
change here) is refused: its gram table would not match the stored features; so is a build
that lacks a function the Python code calls.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

GRAM = 4  # code points per gram
PRIME = 0x9E3779B97F4A7C15  # the gram hash's multipliers (features._gram_hashes)
PRIME_2 = 0xC2B2AE3D27D4EB4F
ACROSS = 0xFFFFFFFF  # the passage number of a gram across a passage's end
CONSTANTS = {"GRAM": GRAM, "PRIME": PRIME, "PRIME_2": PRIME_2, "ACROSS": ACROSS}
# What the Python code calls: a build from an older _native.c lacks some (a stale build).
FUNCTIONS = (
    "shared_count",
    "shared_counts",
    "partial_passages",
    "grams",
    "firsts",
    "number_facts",
    "count_slots",
)


class NativeMismatch(ImportError):
    """The compiled module was built from other constants than the Python code's."""


def compiled() -> ModuleType | None:
    """Return the compiled module if it is built (whatever DEDUP_NO_NATIVE says), else None."""
    try:
        module = importlib.import_module("dedup.engine._native")
    except ImportError:
        return None
    differ = {
        name: getattr(module, name, None)
        for name, value in CONSTANTS.items()
        if getattr(module, name, None) != value
    }
    if differ:
        raise NativeMismatch(
            f"dedup.engine._native was built with {differ}, the Python code has "
            f"{ {name: CONSTANTS[name] for name in differ} }: rebuild it (pip install -e .)"
        )
    missing = [name for name in FUNCTIONS if not hasattr(module, name)]
    if missing:
        raise NativeMismatch(
            f"dedup.engine._native lacks {', '.join(missing)}, built from an older "
            "_native.c: rebuild it (pip install -e .)"
        )
    return module


def load() -> ModuleType | None:
    """Return the compiled module to use: None when DEDUP_NO_NATIVE is set or it is not built."""
    if os.environ.get("DEDUP_NO_NATIVE", "") not in ("", "0"):
        return None
    return compiled()
