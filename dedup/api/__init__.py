"""The JSON API on django-ninja (docs/api.md): pydantic models for what it answers, an
OpenAPI 3 document at /api/openapi.json and a docs page at /api/docs made from the code.

`core` holds the frame (authentication, rate limits, the error shape), `articles` and
`changes` and `sources` the endpoints, `schemas` the models, `urls` the addresses.
"""

from dedup.api import articles, changes, sources
from dedup.api.core import api

__all__ = ["api", "articles", "changes", "sources"]
