from jobs import status as st


def test_every_dlc_status_has_a_tone_and_terminal_ones_are_not_active():
    for status in st.ALL:
        assert st.tone(status) != "" and st.label(status)
    for status in ("Succeeded", "Failed", "Stopped", st.SUBMIT_FAILED):
        assert st.is_terminal(status) and not st.is_active(status) and not st.is_stoppable(status)
    for status in (st.SUBMITTING, "Creating", "Queuing", "Running", "EnvPreparing"):
        assert st.is_active(status) and st.is_stoppable(status)
    assert not st.is_stoppable("Stopping") and st.is_active("Stopping")
    assert st.label(st.SUBMITTING) == "Waiting to submit"
