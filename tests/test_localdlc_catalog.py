"""localdlc conformance: ListEcsSpecs and the job-template actions through the SDK."""

from __future__ import annotations

import json
import uuid

import pytest
from alibabacloud_pai_dlc20201203 import models
from alibabacloud_tea_openapi.exceptions import ClientException

pytestmark = pytest.mark.integration


def test_list_ecs_specs_catalog_filters_sort_paging(localdlc):
    client = localdlc.client()
    everything = client.list_ecs_specs(models.ListEcsSpecsRequest(page_size=100)).body
    names = {s.instance_type for s in everything.ecs_specs}
    assert everything.total_count == len(everything.ecs_specs) >= 20
    for wanted in ("ecs.g6.large", "ecs.g7.xlarge", "ecs.c6.large", "ecs.gn6i-c4g1.xlarge",
                   "ecs.gn7i-c8g1.2xlarge", "ecs.gn6v-c8g1.2xlarge", "ecs.ebmgn8v.48xlarge"):
        assert wanted in names
    assert any(n.startswith("ml.") for n in names)
    g7 = next(s for s in everything.ecs_specs if s.instance_type == "ecs.g7.xlarge")
    assert (g7.cpu, g7.memory, g7.gpu, g7.accelerator_type, g7.resource_type) == (4, 16, 0, "CPU", "ECS")
    assert g7.is_available is True and "PostPaid" in g7.payment_types and g7.spot_stock_status
    t4 = next(s for s in everything.ecs_specs if s.instance_type == "ecs.gn6i-c4g1.xlarge")
    assert t4.gpu == 1 and t4.gpu_type and t4.gpu_memory == 16 and t4.default_gpudriver in t4.supported_gpudrivers
    assert isinstance(t4.non_protect_spot_discount, float)

    gpus = client.list_ecs_specs(models.ListEcsSpecsRequest(accelerator_type="GPU", page_size=100)).body
    assert gpus.total_count > 0 and all(s.accelerator_type == "GPU" and s.gpu > 0 for s in gpus.ecs_specs)
    lingjun = client.list_ecs_specs(models.ListEcsSpecsRequest(resource_type="Lingjun", page_size=100)).body
    assert lingjun.total_count > 0 and all(s.instance_type.startswith("ml.") for s in lingjun.ecs_specs)
    picked = client.list_ecs_specs(models.ListEcsSpecsRequest(instance_types="ecs.g6.large,ecs.c6.large")).body
    assert sorted(s.instance_type for s in picked.ecs_specs) == ["ecs.c6.large", "ecs.g6.large"]
    by_memory = client.list_ecs_specs(models.ListEcsSpecsRequest(
        accelerator_type="CPU", sort_by="Memory", order="asc", page_size=100)).body.ecs_specs
    assert [s.memory for s in by_memory] == sorted(s.memory for s in by_memory)
    page1 = client.list_ecs_specs(models.ListEcsSpecsRequest(page_size=5, page_number=1)).body
    page2 = client.list_ecs_specs(models.ListEcsSpecsRequest(page_size=5, page_number=2)).body
    assert page1.total_count == page2.total_count == everything.total_count
    assert not {s.instance_type for s in page1.ecs_specs} & {s.instance_type for s in page2.ecs_specs}
    default_page = client.list_ecs_specs(models.ListEcsSpecsRequest()).body
    assert len(default_page.ecs_specs) == 10
    with pytest.raises(ClientException) as err:
        client.list_ecs_specs(models.ListEcsSpecsRequest(accelerator_type="TPU"))
    assert err.value.code == "InvalidParameter" and "AcceleratorType" in err.value.data["Message"]
    with pytest.raises(ClientException):
        client.list_ecs_specs(models.ListEcsSpecsRequest(page_size=500))


def test_ecs_spec_jobs_reserve_the_instance_shape(localdlc):
    client = localdlc.client()
    job_id = client.create_job(models.CreateJobRequest(
        display_name="ecs-spec", job_type="PyTorchJob", user_command="true",
        job_specs=[models.JobSpec(type="Worker", pod_count=2, image="img", ecs_spec="ecs.g6.large")])).body.job_id
    body = localdlc.wait_for_status(job_id)
    assert body.status == "Succeeded"
    assert body.request_cpu == 4 and body.request_memory == 16.0 and body.request_gpu == 0.0


def test_job_templates_lifecycle(localdlc):
    client = localdlc.client()
    workspace = f"ws-tpl-{uuid.uuid4().hex[:6]}"
    content_v1 = {"DisplayName": "from-template", "JobType": "PyTorchJob", "UserCommand": "echo v1",
                  "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "img",
                                "ResourceConfig": {"CPU": "1", "Memory": "1Gi"}}]}
    created = client.create_job_template(models.CreateJobTemplateRequest(
        workspace_id=workspace, template_name="My-Template", content=json.dumps(content_v1),
        description="first", metadata={"team": "ml"}, constraints={"$.JobType": "locked"})).body
    template_id = created.template_id
    assert created.version == 1 and created.default_version == 1 and created.request_id

    got = client.get_job_template(template_id, models.GetJobTemplateRequest()).body
    assert got.template_name == "My-Template" and got.default_version == 1 and got.metadata == {"team": "ml"}
    assert [v.version for v in got.versions] == [1] and json.loads(got.versions[0].content) == content_v1
    assert got.versions[0].constraints == {"$.JobType": "locked"}

    content_v2 = dict(content_v1, UserCommand="echo v2")
    updated = client.update_job_template(template_id, models.UpdateJobTemplateRequest(
        content=json.dumps(content_v2), description="second")).body
    assert updated.version == 2 and updated.version_created is True and updated.default_version == 1
    with pytest.raises(ClientException) as err:
        client.update_job_template(template_id, models.UpdateJobTemplateRequest(constraints={"$.A": "locked"}))
    assert "Constraints" in err.value.data["Message"]
    every = client.get_job_template(template_id, models.GetJobTemplateRequest(version="all")).body
    assert [v.version for v in every.versions] == [1, 2] and every.description == "second"
    assert client.set_job_template_default_version(template_id, models.SetJobTemplateDefaultVersionRequest(
        version=2)).body.default_version == 2
    with pytest.raises(ClientException):
        client.set_job_template_default_version(template_id, models.SetJobTemplateDefaultVersionRequest(version=9))

    listed = client.list_job_templates(models.ListJobTemplatesRequest(workspace_id=workspace,
                                                                      template_name="my-temp")).body
    assert listed.total_count == 1 and listed.job_templates[0].template_id == template_id
    assert listed.page_number == 1 and listed.page_size == 10

    # CreateJob from the template: default version (2), request fields override unlocked ones.
    job_id = client.create_job(models.CreateJobRequest(template_id=template_id, display_name="tpl-run")).body.job_id
    body = localdlc.wait_for_status(job_id)
    assert body.display_name == "tpl-run" and body.user_command == "echo v2" and body.status == "Succeeded"
    item = client.list_jobs(models.ListJobsRequest(job_id=job_id)).body.jobs[0]
    assert item.template_id == template_id and item.template_name == "My-Template"
    with pytest.raises(ClientException) as err:
        client.create_job(models.CreateJobRequest(template_id=template_id, job_type="TFJob"))
    assert "locked" in err.value.data["Message"]

    assert client.delete_job_template(template_id, models.DeleteJobTemplateRequest()).body.template_id == template_id
    with pytest.raises(ClientException) as err:
        client.get_job_template(template_id, models.GetJobTemplateRequest())
    assert err.value.status_code == 404
