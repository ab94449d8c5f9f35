"""The fingerprint engine: pure Python, no Django, no Celery.

>>> from dedup.engine import Fingerprinter
>>> fp = Fingerprinter().fingerprint("新华社北京1月1日电 国家主席发表新年讲话。")
>>> fp.status, len(fp.hex)
(<Status.OK: 'ok'>, 16)
"""

from dedup.engine.config import Config, ConfigError
from dedup.engine.fingerprint import Fingerprint, Fingerprinter, Status, simhash, word_hash
from dedup.engine.hamming import distance, distances, pairwise, to_signed, to_unsigned
from dedup.engine.text import normalise

__all__ = [
    "Config",
    "ConfigError",
    "Fingerprint",
    "Fingerprinter",
    "Status",
    "distance",
    "distances",
    "normalise",
    "pairwise",
    "simhash",
    "to_signed",
    "to_unsigned",
    "word_hash",
]
