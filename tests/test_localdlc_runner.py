"""localdlc conformance: pods as processes (rendezvous, TF_CONFIG, mounts, ports), stop, queueing, limits."""

from __future__ import annotations

import json
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from alibabacloud_pai_dlc20201203 import models
from alibabacloud_tea_openapi.exceptions import ClientException

from tests.support.localdlc import alive, job_processes, wait_until

pytestmark = pytest.mark.integration

PY = sys.executable


def spec(role: str = "Worker", pods: int = 1, cpu: str = "1", **kw) -> models.JobSpec:
    return models.JobSpec(type=role, pod_count=pods, image="img",
                          resource_config=models.ResourceConfig(cpu=cpu, memory="1Gi"), **kw)


def request(command: str, specs=None, job_type: str = "PyTorchJob", **kw) -> models.CreateJobRequest:
    return models.CreateJobRequest(display_name=kw.pop("display_name", f"r-{uuid.uuid4().hex[:6]}"),
                                   job_type=job_type, job_specs=specs or [spec()], user_command=command,
                                   workspace_id="ws-runner", **kw)


def logs(client, job_id: str, pod_id: str) -> list[str]:
    return client.get_pod_logs(job_id, pod_id, models.GetPodLogsRequest()).body.logs


RENDEZVOUS = textwrap.dedent("""
    import os, socket, time
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    if rank == 0:
        srv = socket.create_server((addr, port))
        peers = {}
        while len(peers) < world - 1:
            conn, _ = srv.accept()
            r, w = conn.recv(64).decode().split()
            assert int(w) == world, (w, world)
            peers[int(r)] = conn
        for conn in peers.values():
            conn.sendall(f"go {world}".encode())
            conn.close()
        print(f"rank0 met ranks {sorted(peers)} world {world}")
    else:
        for _ in range(200):
            try:
                conn = socket.create_connection((addr, port), timeout=5)
                break
            except OSError:
                time.sleep(0.05)
        conn.sendall(f"{rank} {world}".encode())
        reply = conn.recv(64).decode()
        assert reply == f"go {world}", reply
        print(f"rank{rank} joined world {world}")
""")


def test_pytorch_two_worker_rendezvous_on_loopback(localdlc, tmp_path):
    script = tmp_path / "rendezvous.py"
    script.write_text(RENDEZVOUS)
    client = localdlc.client()
    job_id = client.create_job(request(f"{PY} {script}", [spec(pods=2)])).body.job_id
    body = localdlc.wait_for_status(job_id, timeout=20)
    assert body.status == "Succeeded", body.reason_message
    by_pod = {p.pod_id: logs(client, job_id, p.pod_id) for p in body.pods}
    assert by_pod[f"{job_id}-worker-0"] == ["rank0 met ranks [1] world 2"]
    assert by_pod[f"{job_id}-worker-1"] == ["rank1 joined world 2"]


def test_pytorch_master_is_rank_zero(localdlc):
    client = localdlc.client()
    job_id = client.create_job(request('echo "$RANK/$WORLD_SIZE $MASTER_ADDR"',
                                       [spec("Worker", 2), spec("Master", 1)])).body.job_id
    body = localdlc.wait_for_status(job_id)
    assert body.status == "Succeeded"
    ranks = {p.pod_id: logs(client, job_id, p.pod_id)[0] for p in body.pods}
    assert ranks == {f"{job_id}-master-0": "0/3 127.0.0.1", f"{job_id}-worker-0": "1/3 127.0.0.1",
                     f"{job_id}-worker-1": "2/3 127.0.0.1"}


def test_tfjob_pods_read_a_correct_tf_config(localdlc):
    client = localdlc.client()
    # The PS is terminated once the chief and workers are done: they wait a little, so that under load the PS
    # has printed its TF_CONFIG before it is stopped (an empty PS log failed this test once on a busy machine).
    command = (f'{PY} -c "import json, os, time; c = os.environ[\'TF_CONFIG\']; print(c, flush=True); '
               f'time.sleep(0 if json.loads(c)[\'task\'][\'type\'] == \'ps\' else 3)"')
    job_id = client.create_job(request(command, [spec("Chief"), spec("PS"), spec("Worker", 2)],
                                       job_type="TFJob")).body.job_id
    body = localdlc.wait_for_status(job_id)
    assert body.status == "Succeeded"
    configs = {p.pod_id: json.loads(logs(client, job_id, p.pod_id)[0]) for p in body.pods}
    cluster = configs[f"{job_id}-chief-0"]["cluster"]
    assert sorted(cluster) == ["chief", "ps", "worker"]
    assert [len(cluster[r]) for r in ("chief", "ps", "worker")] == [1, 1, 2]
    addresses = [a for r in cluster.values() for a in r]
    assert len(set(addresses)) == 4 and all(a.startswith("127.0.0.1:") for a in addresses)
    expected = {"chief-0": ("chief", 0), "ps-0": ("ps", 0), "worker-0": ("worker", 0), "worker-1": ("worker", 1)}
    for suffix, (task_type, index) in expected.items():
        config = configs[f"{job_id}-{suffix}"]
        assert config["cluster"] == cluster
        assert config["task"] == {"type": task_type, "index": index}


def test_tfjob_succeeds_when_workers_finish_and_ps_is_terminated(localdlc):
    client = localdlc.client()
    worker = spec("Worker", 1, user_command="echo worker done")
    ps = spec("PS", 1, user_command="sleep 60")
    job_id = client.create_job(request("true", [ps, worker], job_type="TFJob")).body.job_id
    body = localdlc.wait_for_status(job_id, timeout=15)
    assert body.status == "Succeeded"
    assert {p.type: p.status for p in body.pods} == {"PS": "Succeeded", "Worker": "Succeeded"}
    assert job_processes(job_id) == []


def test_custom_ports_and_data_source_symlinks(localdlc, tmp_path):
    data = tmp_path / "dataset"
    data.mkdir()
    (data / "hello.txt").write_text("from the dataset\n")
    client = localdlc.client()
    command = 'echo "$CUSTOM_PORTS"; cat mnt/data/hello.txt; cat "$DLC_MOUNT_0/hello.txt"; ' \
              'test "$DLC_MOUNT_0" = "$DLC_MOUNT_ROOT/mnt/data" && echo root-ok; cat "$DLC_MOUNT_1/hello.txt"'
    req = request(command, settings=models.JobSettings(advanced_settings={"customPortNumPerWorker": 3}),
                  data_sources=[models.CreateJobRequestDataSources(uri=f"file://{data}", mount_path="/mnt/data"),
                                models.CreateJobRequestDataSources(uri=str(data), mount_path="/root/plain"),
                                models.CreateJobRequestDataSources(uri="oss://bucket.oss-cn-hangzhou.aliyuncs.com/x/",
                                                                   mount_path="/mnt/oss")])
    job_id = client.create_job(req).body.job_id
    body = localdlc.wait_for_status(job_id)
    assert body.status == "Succeeded", body.reason_message
    lines = logs(client, job_id, body.pods[0].pod_id)
    ports = lines[0].split(";")
    assert len(ports) == 3 and len(set(ports)) == 3 and all(1024 < int(p) < 65536 for p in ports)
    assert lines[1:] == ["from the dataset", "from the dataset", "root-ok", "from the dataset"]
    assert [d.uri for d in body.data_sources][:2] == [f"file://{data}", str(data)]


def test_missing_local_data_source_fails_the_job(localdlc, tmp_path):
    client = localdlc.client()
    req = request("true", data_sources=[models.CreateJobRequestDataSources(uri=f"file://{tmp_path}/absent",
                                                                           mount_path="/mnt/data")])
    body = localdlc.wait_for_status(client.create_job(req).body.job_id)
    assert body.status == "Failed" and body.reason_code == "DataSourceMountFailed"


def test_stop_mid_run_leaves_no_process(localdlc):
    client = localdlc.client()
    # Each pod also forks a background grandchild: stopping must take the whole process group.
    job_id = client.create_job(request("sleep 60 & echo pid $$; sleep 61", [spec(pods=2)])).body.job_id
    localdlc.wait_for_status(job_id, ["Running"])
    pids = wait_until(lambda: len(job_processes(job_id)) >= 4 and job_processes(job_id))
    assert len(pids) >= 4
    stop = client.stop_job(job_id).body
    assert stop.job_id == job_id and stop.request_id
    body = localdlc.wait_for_status(job_id, timeout=10)
    assert body.status == "Stopped"
    statuses = [h.status for h in body.status_history]
    assert statuses[-3:] == ["Running", "Stopping", "Stopped"]
    assert body.gmt_stopped_time and body.gmt_finish_time
    assert not [p for p in pids if alive(p)]
    assert job_processes(job_id) == []
    # Stopping again is an idempotent success.
    assert client.stop_job(job_id).body.job_id == job_id


def test_stop_escalates_to_sigkill_after_grace(localdlc_factory):
    dlc = localdlc_factory(stop_grace_seconds=0.5)
    client = dlc.client()
    job_id = client.create_job(request("trap '' TERM; sleep 60 & wait; sleep 60")).body.job_id
    dlc.wait_for_status(job_id, ["Running"])
    wait_until(lambda: job_processes(job_id))
    started = time.monotonic()
    client.stop_job(job_id)
    assert client.get_job(job_id, models.GetJobRequest()).body.status == "Stopping"
    body = dlc.wait_for_status(job_id, timeout=10)
    assert body.status == "Stopped" and 0.4 < time.monotonic() - started < 5
    assert job_processes(job_id) == []


def test_stop_while_queued_and_delete_rules(localdlc_factory):
    dlc = localdlc_factory(cpu=1, creating_seconds=0.05, env_preparing_seconds=0.05)
    client = dlc.client()
    running = client.create_job(request("sleep 60")).body.job_id
    dlc.wait_for_status(running, ["Running"])
    queued = client.create_job(request("echo never")).body.job_id
    dlc.wait_for_status(queued, ["Queuing"])
    with pytest.raises(ClientException) as err:
        client.delete_job(running)
    assert err.value.code == "InvalidJobStatus" and err.value.status_code == 400
    client.stop_job(queued)
    body = dlc.wait_for_status(queued)
    assert body.status == "Stopped" and "Running" not in [h.status for h in body.status_history]
    client.stop_job(running)
    assert dlc.wait_for_status(running).status == "Stopped"
    deleted = client.delete_job(running).body
    assert deleted.job_id == running and deleted.request_id
    with pytest.raises(ClientException) as err:
        client.get_job(running, models.GetJobRequest())
    assert err.value.code == "JobNotFound"
    listed = [j.job_id for j in client.list_jobs(models.ListJobsRequest(page_size=100)).body.jobs]
    assert running not in listed and queued in listed
    with pytest.raises(ClientException):
        client.delete_job(running)


def test_queue_runs_one_at_a_time_in_priority_order(localdlc_factory, tmp_path):
    dlc = localdlc_factory(cpu=1, creating_seconds=0.05, env_preparing_seconds=0.05)
    client = dlc.client()
    order = tmp_path / "order.txt"
    cmd = f'echo "start $NAME" >> {order}; sleep 0.3; echo "end $NAME" >> {order}'
    blocker = client.create_job(request(f"sleep 0.8; {cmd}", envs={"NAME": "blocker"})).body.job_id
    dlc.wait_for_status(blocker, ["Running"])
    ids = {}
    for name, priority in (("low", 1), ("high", 9), ("mid", 5), ("bumped", 1)):
        ids[name] = client.create_job(request(cmd, envs={"NAME": name}, priority=priority)).body.job_id
    for job_id in ids.values():
        assert dlc.wait_for_status(job_id, ["Queuing"]).reason_code == "InsufficientResource"
    # UpdateJob raises a queued job's priority, which reorders the queue.
    client.update_job(ids["bumped"], models.UpdateJobRequest(priority=7))
    assert client.get_job(ids["bumped"], models.GetJobRequest()).body.priority == 7
    for job_id in ids.values():
        assert dlc.wait_for_status(job_id, timeout=20).status == "Succeeded"
    lines = order.read_text().split("\n")[:-1]
    names = ["blocker", "high", "bumped", "mid", "low"]
    assert lines == [f"{what} {n}" for n in names for what in ("start", "end")]
    history = [h.status for h in client.get_job(ids["low"], models.GetJobRequest()).body.status_history]
    assert history == ["Creating", "Queuing", "EnvPreparing", "Running", "Succeeded"]


def test_a_job_waiting_at_the_head_holds_back_smaller_ones_until_it_is_stopped(localdlc_factory):
    """Strict queue order: a job that would fit does not pass the waiting job ahead of it; when that one goes,
    the queue moves at once."""
    dlc = localdlc_factory(cpu=2, creating_seconds=0.05, env_preparing_seconds=0.05)
    client = dlc.client()
    running = client.create_job(request("sleep 60")).body.job_id
    dlc.wait_for_status(running, ["Running"])
    big = client.create_job(request("echo big", [spec(cpu="2")])).body.job_id
    assert dlc.wait_for_status(big, ["Queuing"]).reason_code == "InsufficientResource"
    small = client.create_job(request("echo small")).body.job_id  # 1 CPU, and 1 is free
    dlc.wait_for_status(small, ["Queuing"])
    time.sleep(0.5)  # ten scheduler ticks
    assert client.get_job(small, models.GetJobRequest()).body.status == "Queuing"
    client.stop_job(big)
    assert dlc.wait_for_status(small, timeout=10).status == "Succeeded"
    assert [h.status for h in client.get_job(big, models.GetJobRequest()).body.status_history] == \
        ["Creating", "Queuing", "Stopping", "Stopped"]
    client.stop_job(running)


def test_job_larger_than_capacity_fails_and_gpu_needs_gpus(localdlc_factory):
    dlc = localdlc_factory(cpu=2)
    client = dlc.client()
    too_big = client.create_job(request("true", [spec(pods=3)])).body.job_id
    body = dlc.wait_for_status(too_big)
    assert body.status == "Failed" and body.reason_code == "InsufficientResource"
    gpu = client.create_job(request("true", [models.JobSpec(type="Worker", pod_count=1, image="img",
                                                            ecs_spec="ecs.gn6i-c4g1.xlarge")])).body.job_id
    assert dlc.wait_for_status(gpu).reason_code == "InsufficientResource"


def test_max_running_time_ends_the_job(localdlc_factory):
    dlc = localdlc_factory(env={"LOCALDLC_MINUTE_SECONDS": "0.5"}, stop_grace_seconds=0.5)
    client = dlc.client()
    job_id = client.create_job(request("sleep 60", job_max_running_time_minutes=1)).body.job_id
    body = dlc.wait_for_status(job_id, timeout=10)
    assert body.status == "Failed" and body.reason_code == "DeadlineExceeded"
    assert "JobMaxRunningTimeMinutes=1" in body.reason_message
    assert job_processes(job_id) == []
    listed = client.list_jobs(models.ListJobsRequest(job_id=job_id)).body.jobs[0]
    assert listed.job_max_running_time_minutes == 1


def test_pods_do_not_see_localdlc_credentials(localdlc):
    """The fixture passes the AccessKey pair through LOCALDLC_ACCESS_KEY_*; pods must not inherit it."""
    client = localdlc.client()
    job_id = client.create_job(request('echo "[$LOCALDLC_ACCESS_KEY_ID][$LOCALDLC_ACCESS_KEY_SECRET]"')).body.job_id
    body = localdlc.wait_for_status(job_id)
    assert logs(client, job_id, body.pods[0].pod_id) == ["[][]"]
    workdir = Path(localdlc.data_dir) / "jobs" / job_id / "pods" / body.pods[0].pod_id
    assert workdir.is_dir()
