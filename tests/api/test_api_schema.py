"""Schemathesis over the server's own OpenAPI schema: no generated request, valid or invalid, gets a 5xx,
and answers conform to the documented schemas, status codes and content types.

(``schemathesis.pytest.from_fixture`` breaks on pytest 9 — it reads ``request.node._nodeid`` — so the
operations are driven with Hypothesis directly: one bounded run per operation and generation mode.)"""
from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = [pytest.mark.server, pytest.mark.slow]

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Examples per (operation, mode): /v1/extract is where the input surface is. Operations without inputs
# yield one example; ~200 requests in all, ~25 s.
EXAMPLES = {"POST /v1/extract": 90, "POST /v1/documents": 40}
OTHER_EXAMPLES = 8


def test_no_server_errors_over_the_openapi_schema(api_server) -> None:
    schema = schemathesis.openapi.from_url(api_server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    labels = sorted(op.label for op in operations)
    assert "POST /v1/extract" in labels and "POST /v1/models/reload" in labels and "GET /readyz" in labels
    calls: dict[str, int] = {}
    for op in operations:
        for mode in schemathesis.GenerationMode:
            n = EXAMPLES.get(op.label, OTHER_EXAMPLES)

            @given(case=op.as_strategy(generation_mode=mode))
            @settings(max_examples=n, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck))
            def run(case: schemathesis.Case) -> None:
                calls[case.operation.label] = calls.get(case.operation.label, 0) + 1
                response = case.call(base_url=api_server.url, timeout=30)
                case.validate_response(response, checks=CHECKS)

            try:
                run()
            except Unsatisfiable:  # no input to make invalid (e.g. GET /healthz takes no parameters)
                assert mode is schemathesis.GenerationMode.NEGATIVE and op.label != "POST /v1/extract"
    assert calls["POST /v1/extract"] >= 150 and sum(calls.values()) >= 180  # it really generated requests
