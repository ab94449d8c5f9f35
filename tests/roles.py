"""The editor and admin groups for tests, made again when a transactional test emptied them.

Migration 0002 creates the groups; a transactional test flushes every table afterwards, so a
later test may find them gone."""

import importlib


def group(name: str):
    """Return the role group `name` ("editor" or "admin"), creating the roles if missing."""
    from django.apps import apps
    from django.contrib.auth.models import Group

    if not Group.objects.filter(name=name).exists():
        # The migration's function clears each app's models_module when it is done (right for
        # a migration's historical apps); on the live registry that would keep a later flush's
        # post_migrate from making permissions again, so they are put back.
        modules = {config: config.models_module for config in apps.get_app_configs()}
        try:
            importlib.import_module("dedup.migrations.0002_roles").roles_create(apps, None)
        finally:
            for config, module in modules.items():
                config.models_module = module
    return Group.objects.get(name=name)


def user_in(role: str, name: str, password: str = "a long enough password", **fields):
    """Return a new user `name` holding the role `role` ("editor" or "admin"); `fields` are
    the User's own (is_staff=True, say)."""
    from django.contrib.auth.models import User

    user = User.objects.create_user(name, password=password, **fields)
    user.groups.add(group(role))
    return user


def signed_in(user):
    """Return a test Client signed in as `user`, asking for the English pages."""
    from django.test import Client

    client = Client(headers={"accept-language": "en"})
    client.force_login(user)
    return client
