"""Addresses of the review pages (included by webui/urls.py at the site root)."""

from django.urls import path

from webui import bulk_views
from webui import review_views as views

urlpatterns = [
    path("", views.queue, name="queue"),
    path("queue/results/", views.queue_partial, name="queue_results"),
    path("clusters/<int:article_id>/", views.cluster, name="cluster"),
    path("compare/<int:a>/<int:b>/", views.compare, name="compare"),
    path("decisions/", views.decision_create, name="decision_create"),
    path("decisions/bulk/", views.decisions_bulk, name="decisions_bulk"),
    path("decisions/cluster/", views.decisions_cluster, name="decisions_cluster"),
    path("decisions/filtered/", bulk_views.decisions_filtered, name="decisions_filtered"),
    path("decisions/original/", views.original_choose, name="original_choose"),
    path("export/decisions.csv", views.decisions_export, name="decisions_export"),
    path("export/clusters.csv", views.clusters_export, name="clusters_export"),
]
