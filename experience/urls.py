from django.urls import path

from experience import api

urlpatterns = [
    path("experience/propose", api.ExperienceProposeView.as_view()),
    path("experience/get", api.ExperienceGetView.as_view()),
    path("artifact-candidates/list", api.CandidateListView.as_view()),
    path("artifact-candidates/get", api.CandidateGetView.as_view()),
    path("artifact-candidates/approve", api.CandidateApproveView.as_view()),
    path("artifact-candidates/reject", api.CandidateRejectView.as_view()),
    path("artifact-candidates/revise", api.CandidateReviseView.as_view()),
]
