"""The two roles: editors review, admins also configure."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

EDITOR = [
    ("dedup", "view_article"),
    ("dedup", "view_fingerprint"),
    ("dedup", "view_match"),
    ("dedup", "view_uploadbatch"),
    ("dedup", "add_uploadbatch"),
    ("dedup", "view_decision"),
    ("dedup", "add_decision"),
]


def roles_create(apps, schema_editor):
    # Permissions are made after all migrations; make them now so the groups can hold them.
    for config in apps.get_app_configs():
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    editor, _ = Group.objects.get_or_create(name="editor")
    editor.permissions.set(
        Permission.objects.get(content_type__app_label=app, codename=codename)
        for app, codename in EDITOR
    )
    admin, _ = Group.objects.get_or_create(name="admin")
    admin.permissions.set(
        Permission.objects.filter(content_type__app_label__in=["dedup", "auth"])
    )


def roles_remove(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["editor", "admin"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("dedup", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(roles_create, roles_remove)]
