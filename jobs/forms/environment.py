"""Environment: image, datasets, storage mounts, startup command; under "More settings" environment
variables, third-party libraries and code.

Fields only parse types; which combinations are valid is jobs.spec's business.
"""

from __future__ import annotations

from django import forms

from jobs import catalog as C
from jobs.forms.widgets import KeepingSelect, choices

SECTION = "environment"
TITLE = "Environment"
# Choices that change which fields show (re-rendered through HTMX, or the "Apply" button without JS).
DEPENDENT = ("image_type", "libs_mode", "code_mode")

# Official PAI images as the seeds' examples name them. The console's real list comes from AIWorkspace
# ListImages (label system.supported.dlc=true), an API this console does not call yet.
_DSW = "dsw-registry-vpc.{region}.cr.aliyuncs.com/pai/"
OFFICIAL_IMAGES = (
    ("PyTorch 2.3 · CPU · Python 3.11", _DSW + "pytorch-training:2.3-cpu-py311-ubuntu22.04"),
    ("PyTorch 2.3 · GPU · CUDA 12.1", _DSW + "pytorch-training:2.3-gpu-py311-cu121-ubuntu22.04"),
    ("PyTorch 1.12 · CPU · Python 3.9", _DSW + "pytorch-training:1.12-cpu-py39-ubuntu20.04"),
    ("TensorFlow 1.15 · CPU · Python 3.6",
     "registry-vpc.{region}.aliyuncs.com/pai-dlc/tensorflow-training:1.15-cpu-py36-ubuntu18.04"),
    ("TensorFlow 2.13 · GPU · CUDA 11.8", _DSW + "tensorflow-training:2.13-gpu-py310-cu118-ubuntu20.04"),
    ("XGBoost 1.6 · CPU · Python 3.8", _DSW + "xgboost-training:1.6.0-cpu-py38-ubuntu20.04"),
    ("Ray 2.9 · CPU · Python 3.10", _DSW + "ray:2.9-cpu-py310-ubuntu22.04"),
)


def official_images(region: str) -> list[tuple[str, str]]:
    return [(address.format(region=region), label) for label, address in OFFICIAL_IMAGES]


class Form(forms.Form):
    image_type = forms.CharField(label="Image configuration", required=False,
                                 widget=forms.RadioSelect(choices=choices(C.IMAGE_TYPES)))
    image = forms.CharField(label="Image", required=False)
    registry_username = forms.CharField(label="Registry username", required=False,
                                        help_text="Only for a private registry.")
    registry_password = forms.CharField(
        label="Registry password", required=False, strip=False,
        # Never sent back to the browser: a re-rendered page asks for it again.
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password", "hx-preserve": "true"}),
        help_text="Encrypted on its way to DLC and never stored in plain text.",
    )
    command = forms.CharField(
        label="Startup command", required=False, widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
        help_text="Shell commands. DLC injects MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; use $NAME. "
                  "Lines printed as METRIC step=100 loss=0.31 acc=0.8 (or METRIC {\"step\": 100, \"loss\": 0.31}) "
                  "are charted on the job page.",
    )
    libs_mode = forms.CharField(label="Third-party libraries", required=False,
                                widget=forms.RadioSelect(choices=choices(C.LIBS_MODES)))
    libs = forms.CharField(label="Libraries", required=False,
                           widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
                           help_text="One pip requirement per line, e.g. numpy, pandas==2.2 or torch >= 2.0.")
    requirements_dir = forms.CharField(label="Path of requirements.txt", required=False,
                                       help_text="Container path of the file or its folder, e.g. /mnt/code.")
    code_mode = forms.CharField(label="Code builds", required=False,
                                widget=forms.RadioSelect(choices=choices(C.CODE_MODES)))
    code_source_id = forms.CharField(label="Code source", required=False, help_text="A Git code source ID.")
    code_branch = forms.CharField(label="Branch", required=False)
    code_commit = forms.CharField(label="Commit", required=False)
    code_mount_path = forms.CharField(label="Code mount path", required=False,
                                      help_text="Container path of the code, e.g. /mnt/code.")
    code_upload_uri = forms.CharField(
        label="Uploaded code location", required=False,
        help_text="The oss:// path of the uploaded code: the CreateJob API cannot upload local code.",
    )

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        ui = ui or {}
        image = self.fields["image"]
        kind = ui.get("image_type") or "official"
        if kind == "official":
            image.label = "Alibaba Cloud image"
            image.widget = KeepingSelect(choices=[("", "Choose an official image"),
                                                  *official_images(ui.get("region") or "cn-hangzhou")])
        elif kind == "custom":
            image.label = "Custom image"
            image.help_text = "An image added to PAI: public, or in Alibaba Cloud Container Registry (ACR)."
        else:
            image.label = "Image address"
            image.help_text = "A publicly accessible image address; enter credentials below for a private one."
            image.widget.attrs["placeholder"] = "registry.example.com/team/train:1.0"


ACCESS = {"": "Dataset default", "true": "Read-only (RO)", "false": "Read-write (RW)"}


class DatasetForm(forms.Form):
    kind = forms.CharField(label="Dataset type", required=False,
                           widget=KeepingSelect(choices=choices(C.DATASET_KINDS)))
    id = forms.CharField(label="Dataset", required=False, help_text="Dataset ID, e.g. d-abc123.")
    version = forms.CharField(label="Version", required=False)
    read_only = forms.CharField(label="Access", required=False,
                                widget=KeepingSelect(choices=choices(ACCESS), labels=ACCESS))
    mount_path = forms.CharField(label="Mount path", required=False, help_text="e.g. /mnt/data")

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if str(self.data.get(self.add_prefix("kind")) or "") in C.READ_ONLY_DATASET_KINDS:
            # A public dataset mounts read-only: the only option, so the browser selects it (no "Dataset default",
            # which jobs.spec refuses). Read-write chosen before stays shown, with the rule's message at it.
            self.fields["read_only"].widget.choices = [("true", ACCESS["true"])]


class StorageForm(forms.Form):
    type = forms.CharField(
        label="Storage type", required=False,
        widget=KeepingSelect(choices=[(k, f"{v} (Lingjun only)" if k == "bmcpfs" else v)
                                      for k, v in C.STORAGE_TYPES.items()]),
    )
    uri = forms.CharField(label="Storage path", required=False,
                          help_text="oss://bucket.endpoint/path, nas://id.region/path or bmcpfs://id/path")
    mount_path = forms.CharField(label="Mount path", required=False)
    options = forms.CharField(
        label="Advanced settings (JSON)", required=False, widget=forms.TextInput(attrs={"class": "mono"}),
        help_text='OSS: {"mountType":"ossfs"}; NAS and CPFS: {"nconnect":"4"}.',
    )

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)


def _ticked(value: object) -> bool:
    return str(value or "").strip().lower() in ("on", "true", "1", "yes")


class EnvForm(forms.Form):
    key = forms.CharField(label="Variable name", required=False)
    value = forms.CharField(label="Value", required=False)
    # Rows show no help text (an aria-describedby to it would dangle); the env list's note explains Secret.
    secret = forms.BooleanField(label="Secret", required=False)

    def __init__(self, *args, ui: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # No HTMX on the Secret tick: a re-rendered section could not hold a value typed before it (a secret is
        # never written back), so static/js/wizard.js turns the same input into a password field instead.
        if _ticked(self.data.get(self.add_prefix("secret"))):
            # Like the registry password: never written back into a page, and HTMX swaps keep what was typed. The id
            # names the variable: rows renumber after a removal, and a typed secret must not move to another row.
            name = secret_value_name(self.prefix, str(self.data.get(self.add_prefix("key")) or ""))
            self.fields["value"] = forms.CharField(label="Value", required=False, widget=forms.PasswordInput(
                render_value=False, attrs={"autocomplete": "new-password", "hx-preserve": "true", "id": f"id_{name}"}))


def secret_value_name(prefix: str, key: str) -> str:
    """The name the page's id of a secret variable's value field is made of ("id_" + this): row prefix + a tag
    of the variable's name. static/js/wizard.js computes the same tag (32-bit FNV-1a of the UTF-8 name, 8 hex
    digits) when Secret is ticked or the name edited, so the next rendering of the section keeps the typed value."""
    tag = 0x811C9DC5
    for byte in key.strip().encode():
        tag = ((tag ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{prefix}-value-{tag:08x}"


ROWS = {"datasets": DatasetForm, "storages": StorageForm, "envs": EnvForm}
# Row choices that change the row's other fields, as DEPENDENT's do the section's: the dataset type limits Access.
ROW_DEPENDENT = {"datasets": ("kind",)}
ROW_LABELS = {"datasets": "Dataset", "storages": "Storage", "envs": "Variable"}
