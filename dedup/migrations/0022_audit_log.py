"""The audit log (models.AuditEntry); admins may read it in the admin."""

import django.db.models.deletion
from django.conf import settings
from django.contrib.auth.management import create_permissions
from django.db import migrations, models


def admins_read_the_log(apps, schema_editor):
    config = apps.get_app_config("dedup")
    config.models_module = True  # permissions are made after all migrations: make them now
    create_permissions(config, apps=apps, verbosity=0)
    config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.get(content_type__app_label="dedup", codename="view_auditentry")
    for group in Group.objects.filter(name="admin"):
        group.permissions.add(view)


class Migration(migrations.Migration):
    dependencies = [
        ("dedup", "0021_rebuild_lease"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("username", models.CharField(blank=True, max_length=150)),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("admin.add", "added in the admin"),
                            ("admin.change", "changed in the admin"),
                            ("admin.delete", "deleted in the admin"),
                            ("settings.change", "settings changed"),
                            ("upload.delete", "upload deleted"),
                            ("token.issue", "API token issued"),
                            ("token.revoke", "API token revoked"),
                            ("user.roles", "roles changed"),
                            ("signin.failed", "sign-in failed"),
                            ("signin.locked", "sign-in locked out"),
                        ],
                        db_index=True,
                        max_length=20,
                    ),
                ),
                ("object_type", models.CharField(blank=True, max_length=100)),
                ("object_id", models.CharField(blank=True, max_length=64)),
                ("object_repr", models.CharField(blank=True, max_length=300)),
                ("changes", models.JSONField(blank=True, default=dict)),
                ("message", models.TextField(blank=True)),
                ("address", models.CharField(blank=True, max_length=64)),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "audit entry",
                "verbose_name_plural": "audit log",
                "indexes": [models.Index(fields=["username", "at"], name="audit_user_at")],
            },
        ),
        migrations.RunPython(admins_read_the_log, migrations.RunPython.noop),
    ]
