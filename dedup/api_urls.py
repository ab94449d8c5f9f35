"""Addresses of the JSON API, mounted at /api/."""

from django.urls import path, re_path

from dedup import api

app_name = "api"
urlpatterns = [
    path("articles", api.articles_submit, name="articles_submit"),
    path("articles/<int:article_id>", api.article_detail, name="article_detail"),
    path("articles/<int:article_id>/matches", api.article_matches, name="article_matches"),
    path("check", api.text_check, name="text_check"),
    path("uploads", api.upload_create, name="upload_create"),
    path("uploads/<int:upload_id>", api.upload_detail, name="upload_detail"),
    re_path(r"^(?P<path>.*)$", api.not_found),
]
