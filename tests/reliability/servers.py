"""Real API servers for the reliability tests: the shared harness in tests/server_harness.py."""
from __future__ import annotations

from server_harness import BIN, REPO, Server, free_port, rss_kib, start_server  # noqa: F401 (re-exported)
