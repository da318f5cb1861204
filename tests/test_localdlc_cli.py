"""localdlc conformance: the command-line / environment contract of ``python -m localdlc``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.localdlc import ROOT, LocalDLC, free_port

pytestmark = pytest.mark.integration


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 20) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALDLC_")}
    full_env["PYTHONPATH"] = str(ROOT)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "localdlc", *args], cwd=ROOT, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def test_help_documents_every_option_and_env_var():
    out = run("--help").stdout
    for flag in ("--host", "--port", "--data-dir", "--access-key-id", "--access-key-secret", "--cpu",
                 "--memory-gib", "--gpu", "--workspace-id", "--faults", "--creating-seconds",
                 "--env-preparing-seconds", "--stop-grace-seconds"):
        assert flag in out
    for env in ("LOCALDLC_HOST", "LOCALDLC_PORT", "LOCALDLC_DATA_DIR", "LOCALDLC_ACCESS_KEY_ID",
                "LOCALDLC_ACCESS_KEY_SECRET", "LOCALDLC_MINUTE_SECONDS"):
        assert env in out
    assert "127.0.0.1" in out and "8100" in out and "./var/localdlc" in out


def test_missing_keys_is_a_usage_error():
    result = run("--port", "0")
    assert result.returncode == 2 and "access-key" in result.stderr


def wait_health(port: int, proc: subprocess.Popen, timeout: float = 15) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_localdlc/health", timeout=1) as resp:
                return json.loads(resp.read())
        except OSError:
            time.sleep(0.05)
    raise AssertionError("no answer")


def test_environment_variables_configure_everything(tmp_path: Path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALDLC_")}
    env.update({"PYTHONPATH": str(ROOT), "LOCALDLC_PORT": str(port), "LOCALDLC_HOST": "127.0.0.1",
                "LOCALDLC_DATA_DIR": str(tmp_path / "state"), "LOCALDLC_ACCESS_KEY_ID": "AKenv",
                "LOCALDLC_ACCESS_KEY_SECRET": "SKenv", "LOCALDLC_CPU": "3"})
    proc = subprocess.Popen([sys.executable, "-m", "localdlc"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        health = wait_health(port, proc)
        assert health["ok"] and health["capacity"]["cpu"] == 3
        assert (tmp_path / "state" / "localdlc.sqlite3").exists()
        dlc = LocalDLC.__new__(LocalDLC)  # reuse the SDK helpers against this process without starting one
        dlc.host, dlc.port, dlc.access_key_id, dlc.access_key_secret = "127.0.0.1", port, "AKenv", "SKenv"
        from alibabacloud_pai_dlc20201203 import models

        assert dlc.client().list_jobs(models.ListJobsRequest()).body.total_count == 0
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_non_loopback_bind_warns(tmp_path: Path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "localdlc", "--host", "0.0.0.0", "--port", str(port),
                             "--data-dir", str(tmp_path), "--access-key-id", "a", "--access-key-secret", "b"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_health(port, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "WARNING" in proc.stderr.read()


def test_workspace_restriction(localdlc_factory):
    from alibabacloud_pai_dlc20201203 import models
    from alibabacloud_tea_openapi.exceptions import ClientException

    dlc = localdlc_factory(workspace_id=["ws-a", "ws-b"])
    client = dlc.client()
    spec = models.JobSpec(type="Worker", pod_count=1, image="img")
    ok = client.create_job(models.CreateJobRequest(display_name="ok", job_type="PyTorchJob", job_specs=[spec],
                                                   user_command="true", workspace_id="ws-b"))
    assert ok.body.job_id
    with pytest.raises(ClientException) as err:
        client.create_job(models.CreateJobRequest(display_name="no", job_type="PyTorchJob", job_specs=[spec],
                                                  user_command="true", workspace_id="ws-c"))
    assert err.value.status_code == 403 and "WorkspaceId" in err.value.data["Message"]


def test_second_instance_on_the_same_data_dir_is_refused(localdlc_factory):
    dlc = localdlc_factory()
    result = run("--port", "0", "--data-dir", str(dlc.data_dir),
                 env={"LOCALDLC_ACCESS_KEY_ID": "a", "LOCALDLC_ACCESS_KEY_SECRET": "b"})
    assert result.returncode == 3 and "already using" in result.stderr
