"""Schemathesis over every operation of the served OpenAPI schema with a configurable example budget
(``NERSERVICE_SCHEMATHESIS_EXAMPLES`` per operation and generation mode for POST /v1/extract, a tenth of
that for the others; default 150). Positive and negative generation; a pass means every generated request
got a non-5xx answer conforming to the documented status codes, content types and response schemas.
(tests/api/test_api_schema.py is the fixed-budget version run in every slow CI pass.)"""
from __future__ import annotations

import os
import time
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from .servers import Server

pytestmark = [pytest.mark.server, pytest.mark.slow]

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXTRACT_EXAMPLES = int(os.environ.get("NERSERVICE_SCHEMATHESIS_EXAMPLES", "150"))
SEED = int(os.environ.get("NERSERVICE_SCHEMATHESIS_SEED", "0"))


def test_schemathesis_budget_run(rel_server: Server) -> None:
    schema = schemathesis.openapi.from_url(rel_server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {"POST /v1/extract", "POST /v1/models/reload", "GET /v1/models", "GET /readyz", "GET /healthz",
            "GET /metrics"} <= {op.label for op in operations}
    calls: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    t0 = time.monotonic()
    for op in operations:
        for mode in schemathesis.GenerationMode:
            n = EXTRACT_EXAMPLES if op.label == "POST /v1/extract" else max(5, EXTRACT_EXAMPLES // 10)

            @seed(SEED)
            @given(case=op.as_strategy(generation_mode=mode))
            @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
            def run(case: schemathesis.Case) -> None:
                response = case.call(base_url=rel_server.url, timeout=60)
                calls[case.operation.label] += 1
                statuses[response.status_code] += 1
                case.validate_response(response, checks=CHECKS)

            try:
                run()
            except Unsatisfiable:  # no input to make invalid (e.g. GET /healthz takes no parameters)
                assert mode is schemathesis.GenerationMode.NEGATIVE and op.label != "POST /v1/extract"
    total = sum(calls.values())
    print(f"schemathesis: {total} cases over {len(operations)} operations in {time.monotonic() - t0:.0f} s; "
          f"statuses {dict(sorted(statuses.items()))}; per operation {dict(calls)}; 0 server errors")
    assert not any(s >= 500 for s in statuses)
    assert calls["POST /v1/extract"] >= EXTRACT_EXAMPLES
