#!/usr/bin/env python3
"""Refresh tests/durations.json, the seconds each unit of work took, which parallel runs use to start the
longest units first (tests/conftest.py). Input: a run's JUnit XML, e.g.
``.venv/bin/python -m pytest -n 2 --dist loadfile --junitxml=/tmp/run.xml`` then
``python scripts/test_durations.py /tmp/run.xml``. Units under a second are left out (they run last)."""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def file_of(classname: str) -> str:
    """``tests.api.test_x.TestY`` -> ``tests/api/test_x.py`` (the longest dotted prefix that is a file)."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        path = "/".join(parts[:n]) + ".py"
        if (REPO / path).is_file():
            return path
    raise SystemExit(f"no test file for {classname!r}")


def main(xml_path: str) -> None:
    from conftest import DURATIONS, work_unit

    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        seconds[work_unit(file_of(case.get("classname", "")))] += float(case.get("time", "0"))
    kept = {unit: round(s) for unit, s in sorted(seconds.items(), key=lambda kv: -kv[1]) if s >= 1}
    DURATIONS.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    print(f"{DURATIONS.relative_to(REPO)}: {len(kept)} units, {sum(kept.values())} s in all")


if __name__ == "__main__":
    main(*sys.argv[1:])
