"""Create a JSON API token for a user and print it once."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dedup import services


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print it; only its hash is kept."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for, e.g. 'crawler'")

    def handle(self, *args, username: str, name: str, **options):
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(
                f"There is no user {username!r}; create one with manage.py createsuperuser."
            ) from None
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive; activate it in the admin first.")
        _, key = services.token_issue(owner=user, name=name)  # by no one signed in: a shell
        self.stderr.write("Keep this token now; it cannot be shown again:")
        self.stdout.write(key)
