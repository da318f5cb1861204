"""The first create page's form: a single-role job. Superseded by the six-section wizard."""

from django import forms

FRAMEWORKS = [("PyTorchJob", "PyTorch"), ("TFJob", "TensorFlow"), ("XGBoostJob", "XGBoost")]


class QuickJobForm(forms.Form):
    name = forms.RegexField(
        regex=r"^[A-Za-z0-9_.-]{1,256}$",
        max_length=256,
        error_messages={"invalid": "Use only letters, digits, '_', '.' and '-' (at most 256 characters)."},
    )
    image = forms.CharField(
        max_length=512, initial="dsw-registry.cn-hangzhou.cr.aliyuncs.com/pai/pytorch-training:2.3-cpu-py311"
    )
    framework = forms.ChoiceField(choices=FRAMEWORKS, initial="PyTorchJob")
    workers = forms.IntegerField(min_value=1, max_value=100, initial=1)
    instance_type = forms.CharField(max_length=64, initial="ecs.g6.large")
    command = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}))

    def body(self, workspace_id: str) -> dict:
        data = self.cleaned_data
        body = {
            "DisplayName": data["name"],
            "JobType": data["framework"],
            "JobSpecs": [
                {
                    "Type": "Worker",
                    "Image": data["image"],
                    "PodCount": data["workers"],
                    "EcsSpec": data["instance_type"],
                }
            ],
            "UserCommand": data["command"],
        }
        if workspace_id:
            body["WorkspaceId"] = workspace_id
        return body
