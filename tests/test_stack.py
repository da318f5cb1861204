"""consoleapp.stack: the environment every service of the embedded console starts with."""

from consoleapp.stack import Stack


def test_webhook_links_point_at_the_stacks_own_web_port_unless_the_operator_set_one(tmp_path, monkeypatch):
    monkeypatch.delenv("DLC_BASE_URL", raising=False)
    assert Stack(data_dir=tmp_path, web_port=8765).env()["DLC_BASE_URL"] == "http://127.0.0.1:8765"
    monkeypatch.setenv("DLC_BASE_URL", "https://dlc.example.com")
    assert Stack(data_dir=tmp_path, web_port=8765).env()["DLC_BASE_URL"] == "https://dlc.example.com"
