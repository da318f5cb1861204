from jobs import secretbox


def test_sealed_secret_does_not_contain_the_plaintext_and_round_trips(settings, tmp_path):
    settings.DLC_SECRET_BOX_KEY = "k1"
    token = secretbox.seal({"registry_password": "hunter2-very-secret"})
    assert "hunter2" not in token
    assert secretbox.unseal(token) == {"registry_password": "hunter2-very-secret"}


def test_another_key_cannot_unseal(settings):
    settings.DLC_SECRET_BOX_KEY = "k1"
    token = secretbox.seal({"registry_password": "p"})
    settings.DLC_SECRET_BOX_KEY = "k2"
    assert secretbox.unseal(token) == {}
    assert secretbox.seal({}) == "" and secretbox.unseal("") == {}
