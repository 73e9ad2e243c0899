"""The base of every ``/v1/`` view: bearer auth, strict JSON in, the error shape out."""

from typing import Any

from rest_framework.response import Response
from rest_framework.views import APIView

from powercontext.api.auth import BearerAuthentication, IsCaller, Role


class ApiView(APIView):
    authentication_classes = [BearerAuthentication]
    # Every view names its operation (its OpenAPI operation id) and the role the caller
    # needs for it (``powercontext.api.auth``); one without a role is refused.
    permission_classes = [IsCaller]
    operation = ""
    role: Role | None = None
    # No OPTIONS self-description: each operation is its documented method alone (the
    # OpenAPI document describes it), anything else is 405 ``method_not_allowed``.
    metadata_class = None

    def validated(self, serializer_class: type, data: Any | None = None) -> dict[str, Any]:
        serializer = serializer_class(data=self.request.data if data is None else data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    @staticmethod
    def respond(payload: Any, status: int = 200) -> Response:
        return Response(payload, status=status)
