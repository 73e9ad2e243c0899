from django.urls import path

from contextpack import api

urlpatterns = [
    path("context/prepare", api.PrepareContextView.as_view()),
    path("context/session", api.SessionContextView.as_view()),
]
