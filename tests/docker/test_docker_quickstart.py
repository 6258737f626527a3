"""scripts/quickstart.sh (what `make quickstart` runs) and scripts/check_readme.sh.

The quickstart runs for real in isolated folders (its own runs dir, embedded store and port): local Spark
preprocess + train, registration and promotion in the embedded store, the API in the background, one
request. The API it leaves running is stopped by its PID file (and, failing that, by the PID itself)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from docker_tools import REPO, free_port

from helpers import jvm_env

QUICKSTART = REPO / "scripts" / "quickstart.sh"
CHECK_README = REPO / "scripts" / "check_readme.sh"


def _env(tmp_path: Path, port: int, corpus: dict[str, Path], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NERSERVICE_")}
    # jvm_env(): the JIT and GC options of every Spark JVM the tests start (helpers.JVM_OPTS); local Spark
    # runs the whole job in the spark-submit JVM.
    return {**env, **jvm_env(), "RUNS_DIR": str(tmp_path / "runs"), "NERSERVICE_STORE_DIR": str(tmp_path / "models"),
            "PORT": str(port), "CORPUS_DIR": str(Path(corpus["train"]).parent), "EPOCHS": "2",
            "VENV": str(REPO / ".venv"), **extra}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.server
def test_quickstart_trains_registers_serves_and_stops(tmp_path, demo_corpus):
    port = free_port()
    env = _env(tmp_path, port, demo_corpus)
    pid_file = tmp_path / "runs" / "api.pid"
    pid = None
    try:
        first = subprocess.run(["bash", str(QUICKSTART)], env=env, capture_output=True, text=True, timeout=900)
        assert first.returncode == 0, (first.stdout + first.stderr)[-6000:]
        out = first.stdout
        assert "spark-submit --master local[*] spark_jobs/preprocess.py" in out  # the Spark path was taken
        assert "spark_jobs/train.py --workers 1" in out
        assert f"web page:     http://127.0.0.1:{port}/" in out
        pid = int(pid_file.read_text())
        assert _alive(pid)

        # The printed answer is the API's JSON for the example text, with offsets into that text.
        answer = json.loads(out[out.index("{\n", out.index("one example request")):out.index("==> done")])
        assert answer["model"] == {"name": "demo", "version": "1"}
        text = "Cisplatin-induced nephrotoxicity was observed in patients with breast cancer who also received tamoxifen."
        for ent in answer["results"][0]["entities"]:
            assert text[ent["start"]:ent["end"]] == ent["text"]

        # The server it left running answers, on loopback.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as resp:
            assert json.load(resp)["model"]["name"] == "demo"

        # Idempotent: a second run reuses the training (no second version) and replaces the server.
        second = subprocess.run(["bash", str(QUICKSTART)], env=env, capture_output=True, text=True, timeout=600)
        assert second.returncode == 0, (second.stdout + second.stderr)[-6000:]
        assert "already trained and registered on these inputs" in second.stdout
        assert '"version": "1"' in second.stdout
        assert not _alive(pid), "the first run's server should have been stopped"
        pid = int(pid_file.read_text())
        assert _alive(pid)

        status = subprocess.run(["bash", str(QUICKSTART), "status"], env=env, capture_output=True, text=True)
        assert f"API running: PID {pid}" in status.stdout

        stop = subprocess.run(["bash", str(QUICKSTART), "stop"], env=env, capture_output=True, text=True, timeout=60)
        assert stop.returncode == 0 and f"stopped the API (PID {pid})" in stop.stdout
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(pid)
        assert not pid_file.exists()
    finally:
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_quickstart_refuses_a_corpus_folder_without_training_data(tmp_path, demo_corpus):
    empty = tmp_path / "empty"
    empty.mkdir()
    env = _env(tmp_path, free_port(), demo_corpus, CORPUS_DIR=str(empty))
    proc = subprocess.run(["bash", str(QUICKSTART)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert f"no training file: expected {empty}/train.tsv" in proc.stderr
    assert not (tmp_path / "runs" / "api.pid").exists()


def test_quickstart_stop_without_a_server_is_harmless(tmp_path, demo_corpus):
    env = _env(tmp_path, free_port(), demo_corpus)
    (tmp_path / "runs").mkdir()
    # A PID file naming a live process that is not our server (this test's own process) must not be killed.
    (tmp_path / "runs" / "api.pid").write_text(str(os.getpid()))
    proc = subprocess.run(["bash", str(QUICKSTART), "stop"], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "no API running" in proc.stdout
    assert _alive(os.getpid())


def test_check_readme_runs_the_first_code_block_of_a_fresh_clone(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# title\n\nText.\n\n```bash\n# a comment line is skipped\ntest -f pyproject.toml && "
                      "test ! -e .venv && pwd > \"$MARKER\"\n\nbash -c 'exit 0'\n```\n\n```bash\nexit 9\n```\n")
    marker = tmp_path / "where"
    listed = subprocess.run(["bash", str(CHECK_README), "--readme", str(readme), "--list"], capture_output=True,
                            text=True, timeout=30)
    assert listed.stdout.splitlines() == ['test -f pyproject.toml && test ! -e .venv && pwd > "$MARKER"',
                                          "bash -c 'exit 0'"]
    proc = subprocess.run(["bash", str(CHECK_README), "--readme", str(readme)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "MARKER": str(marker)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran_in = Path(marker.read_text().strip())
    assert ran_in.name == "nerservice" and ran_in != REPO
    assert not ran_in.exists(), "the clone is deleted afterwards"
    assert "2 README command(s) succeeded on a fresh clone" in proc.stdout


def test_check_readme_fails_with_the_failing_commands_status(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("```sh\ntrue\nexit 7\ntouch should-not-run\n```\n")
    proc = subprocess.run(["bash", str(CHECK_README), "--working-tree", "--readme", str(readme)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 7
    assert "FAILED: 'exit 7'" in proc.stderr
    assert "should-not-run" not in proc.stdout
