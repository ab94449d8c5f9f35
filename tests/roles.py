"""The editor and admin groups for tests, made again when a transactional test emptied them.

Migration 0002 creates the groups; a transactional test flushes every table afterwards, so a
later test may find them gone."""

import importlib


def group(name: str):
    """Return the role group `name` ("editor" or "admin"), creating the roles if missing."""
    from django.apps import apps
    from django.contrib.auth.models import Group

    if not Group.objects.filter(name=name).exists():
        importlib.import_module("dedup.migrations.0002_roles").roles_create(apps, None)
    return Group.objects.get(name=name)
