"""The review dashboard: server-rendered pages for editors and admins."""
