"""The Experience family's errors (the generic ones are ``powercontext.exceptions``)."""

from powercontext.exceptions import PowerContextError


class CandidateNotFound(PowerContextError):
    code, status, default_message = "candidate_not_found", 404, "Candidate not found."


class CandidateConflict(PowerContextError):
    code, status = "candidate_conflict", 409
    default_message = "The candidate has a newer version; re-read it and retry."


class CandidateTerminal(PowerContextError):
    code, status = "candidate_terminal", 409
    default_message = "The candidate has already been decided."
