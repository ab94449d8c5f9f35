"""Addresses of the dashboard, mounted at the site root: review pages, upload, articles and
search, overview, the audit log, the sources."""

from django.urls import include, path

from webui import article_views, audit_views, live, source_views, views

app_name = "webui"
urlpatterns = [
    path("upload/", views.upload_page, name="upload_page"),
    path("upload/<int:upload_id>/status.json", views.upload_status, name="upload_status"),
    path("uploads/<int:upload_id>/", article_views.upload_detail, name="upload_detail"),
    path("articles/", article_views.article_search, name="article_search"),
    path("articles/<int:article_id>/", article_views.article, name="article"),
    path("overview/", views.overview, name="overview"),
    path("audit/", audit_views.audit, name="audit"),
    path("live/queue.json", live.queue, name="live_queue"),
    path("live/cluster.json", live.cluster, name="live_cluster"),
    path("sources/", source_views.sources, name="sources"),
    path("sources/edges.csv", source_views.edges_export, name="sources_edges_export"),
    path("sources/<path:name>/", source_views.source, name="source"),
    path("", include("webui.review_urls")),
]
