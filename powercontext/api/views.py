"""The base of every ``/v1/`` view: bearer auth, strict JSON in, the error shape out."""

from typing import Any

from rest_framework.response import Response
from rest_framework.views import APIView

from powercontext.api.auth import BearerAuthentication, IsCaller


class ApiView(APIView):
    authentication_classes = [BearerAuthentication]
    # Checked against ``powercontext.api.auth.OPERATION_ROLES``: every view names its
    # operation (its OpenAPI operation id), and one without a role is refused.
    permission_classes = [IsCaller]
    operation = ""
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
