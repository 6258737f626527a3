"""The corpus mutation property of tests/data/test_properties.py at a larger, configurable example count:
every mutated corpus either parses or fails with a coded, located error, and read + quarantined sentences
add up to the input's. ``NERSERVICE_FUZZ_EXAMPLES`` (default 1000) and ``NERSERVICE_FUZZ_SEED`` (default 0)
set the budget; the run stops at the first counterexample, so a pass means 0 failures over N corpora."""
from __future__ import annotations

import os

import data.test_properties as props  # tests/data (tests/ is on sys.path via its conftest)
import pytest
from hypothesis import HealthCheck, given, seed, settings

pytestmark = [pytest.mark.slow]

EXAMPLES = int(os.environ.get("NERSERVICE_FUZZ_EXAMPLES", "1000"))
SEED = int(os.environ.get("NERSERVICE_FUZZ_SEED", "0"))


def test_mutated_corpora_at_scale() -> None:
    check = props.test_mutated_corpora_parse_or_fail_with_a_location.hypothesis.inner_test
    seen = {"cases": 0, "strict_ok": 0, "strict_errors": 0, "bytes": 0}

    @seed(SEED)
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(props.mutated_corpus())
    def run(case: tuple[bytes, str]) -> None:
        seen["cases"] += 1
        seen["bytes"] += len(case[0])
        try:
            props.parse_bytes(case[0], source=props.SOURCE, fmt=case[1])
            seen["strict_ok"] += 1
        except props.CorpusError:
            seen["strict_errors"] += 1
        check(case)

    run()
    print(f"mutated corpora: {seen['cases']} checked (seed {SEED}); strict parse ok {seen['strict_ok']}, "
          f"coded errors {seen['strict_errors']}; {seen['bytes'] / 1e6:.1f} MB of input; 0 failures")
    assert seen["cases"] >= EXAMPLES * 0.9  # really generated that many (not cut short by filtering)
    assert seen["strict_ok"] and seen["strict_errors"]  # both outcomes exercised
