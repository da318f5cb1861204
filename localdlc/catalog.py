"""The ECS / Lingjun instance-type catalog that ListEcsSpecs serves.

The figures follow the public Alibaba Cloud instance-family tables (vCPU, GiB of memory, GPU model and
GPU memory). Availability, spot stock and discounts are fixed, plausible values: localdlc has no market.
The runner also uses this table to turn ``JobSpecs[].EcsSpec`` into a resource request.
"""

from __future__ import annotations

from typing import Any

_DRIVERS = ["470.199.02", "525.105.17", "535.161.08", "550.127.08"]
_DEFAULT_DRIVER = "535.161.08"


def _cpu(instance_type: str, cpu: int, memory: int, *, spot: str = "WithStock", discount: float = 0.1,
         available: bool = True) -> dict[str, Any]:
    return {
        "InstanceType": instance_type,
        "Cpu": cpu,
        "Memory": memory,
        "Gpu": 0,
        "GpuType": "",
        "GpuMemory": 0,
        "AcceleratorType": "CPU",
        "ResourceType": "ECS",
        "IsAvailable": available,
        "PaymentTypes": ["PostPaid", "Spot"],
        "SpotStockStatus": spot,
        "NonProtectSpotDiscount": discount,
        "DefaultGPUDriver": "",
        "SupportedGPUDrivers": [],
    }


def _gpu(instance_type: str, cpu: int, memory: int, gpu: int, gpu_type: str, gpu_memory: int, *,
         resource_type: str = "ECS", spot: str = "WithStock", discount: float = 0.2,
         available: bool = True) -> dict[str, Any]:
    payment = ["PostPaid", "Spot"] if resource_type == "ECS" else ["PrePaid", "Spot"]
    return {
        "InstanceType": instance_type,
        "Cpu": cpu,
        "Memory": memory,
        "Gpu": gpu,
        "GpuType": gpu_type,
        "GpuMemory": gpu_memory,
        "AcceleratorType": "GPU",
        "ResourceType": resource_type,
        "IsAvailable": available,
        "PaymentTypes": payment,
        "SpotStockStatus": spot,
        "NonProtectSpotDiscount": discount,
        "DefaultGPUDriver": _DEFAULT_DRIVER,
        "SupportedGPUDrivers": list(_DRIVERS),
    }


# Order matters: it stands in for GmtCreateTime when a caller sorts by it.
ECS_SPECS: list[dict[str, Any]] = [
    _cpu("ecs.c6.large", 2, 4),
    _cpu("ecs.c6.xlarge", 4, 8),
    _cpu("ecs.c6.2xlarge", 8, 16),
    _cpu("ecs.g6.large", 2, 8),
    _cpu("ecs.g6.xlarge", 4, 16),
    _cpu("ecs.g6.2xlarge", 8, 32),
    _cpu("ecs.g6.4xlarge", 16, 64, spot="ClosedWithStock"),
    _cpu("ecs.r6.large", 2, 16),
    _cpu("ecs.c7.large", 2, 4),
    _cpu("ecs.c7.2xlarge", 8, 16),
    _cpu("ecs.g7.large", 2, 8),
    _cpu("ecs.g7.xlarge", 4, 16),
    _cpu("ecs.g7.2xlarge", 8, 32),
    _cpu("ecs.g7.4xlarge", 16, 64),
    _cpu("ecs.g7.8xlarge", 32, 128, spot="WithoutStock"),
    _cpu("ecs.r7.xlarge", 4, 32),
    _gpu("ecs.gn6i-c4g1.xlarge", 4, 15, 1, "Tesla-T4", 16),
    _gpu("ecs.gn6i-c8g1.2xlarge", 8, 31, 1, "Tesla-T4", 16),
    _gpu("ecs.gn6i-c24g1.12xlarge", 48, 186, 2, "Tesla-T4", 16),
    _gpu("ecs.gn6v-c8g1.2xlarge", 8, 32, 1, "Tesla-V100-SXM2-16GB", 16),
    _gpu("ecs.gn6v-c8g1.16xlarge", 64, 256, 8, "Tesla-V100-SXM2-16GB", 16, spot="WithoutStock"),
    _gpu("ecs.gn6e-c12g1.3xlarge", 12, 92, 1, "Tesla-V100-SXM2-32GB", 32),
    _gpu("ecs.gn7i-c8g1.2xlarge", 8, 30, 1, "NVIDIA A10", 24),
    _gpu("ecs.gn7i-c16g1.4xlarge", 16, 60, 1, "NVIDIA A10", 24),
    _gpu("ecs.gn7i-c32g1.8xlarge", 32, 188, 1, "NVIDIA A10", 24),
    _gpu("ecs.gn7e-c16g1.4xlarge", 16, 125, 1, "NVIDIA A100-SXM4-80GB", 80, available=False),
    _gpu("ecs.gn7-c12g1.3xlarge", 12, 94, 1, "NVIDIA A100-SXM4-40GB", 40),
    _gpu("ecs.gn8is.2xlarge", 8, 64, 1, "NVIDIA L20", 48),
    _gpu("ecs.ebmgn7e.32xlarge", 128, 1024, 8, "NVIDIA A100-SXM4-80GB", 80, spot="WithoutStock"),
    _gpu("ecs.ebmgn8v.48xlarge", 192, 1024, 8, "NVIDIA H20", 96, spot="WithoutStock", discount=0.3),
    _gpu("ml.gu7i.c16m60.1-gu30", 16, 60, 1, "GU30", 24, resource_type="Lingjun"),
    _gpu("ml.gu7i.c32m188.1-gu30", 32, 188, 1, "GU30", 24, resource_type="Lingjun"),
    _gpu("ml.gu7xf.c96m1600.8-gu108", 96, 1600, 8, "GU108", 80, resource_type="Lingjun"),
    _gpu("ml.gu8xf.8xlarge-gu108", 128, 1024, 8, "GU108", 80, resource_type="Lingjun", spot="WithoutStock"),
    _gpu("ml.gx7xf.c96m1600.8-gx8", 96, 1600, 8, "GX8", 80, resource_type="Lingjun", available=False),
]


def find_spec(instance_type: str) -> dict[str, Any] | None:
    """Look an instance type up; DLC treats instance types case-sensitively."""
    for spec in ECS_SPECS:
        if spec["InstanceType"] == instance_type:
            return spec
    return None
