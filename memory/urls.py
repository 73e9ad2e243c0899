from django.urls import path

from memory import api

urlpatterns = [
    path("memory/remember", api.MemoryRememberView.as_view()),
    path("memory/search", api.MemorySearchView.as_view()),
    path("memory/entries/list", api.MemoryEntriesListView.as_view()),
    path("memory/entries/get", api.MemoryEntryGetView.as_view()),
    path("memory/entries/revise", api.MemoryEntryReviseView.as_view()),
    path("memory/entries/retire", api.MemoryEntryRetireView.as_view()),
    path("memory/entries/reactivate", api.MemoryEntryReactivateView.as_view()),
    path("memory/changes", api.MemoryChangesView.as_view()),
]
