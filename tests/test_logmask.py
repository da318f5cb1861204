"""jobs.logmask: a job's secret values masked in its log by keyed fingerprints (what is caught, what is not, no
marks), a line as a terminal shows it (ANSI codes, tqdm's carriage returns); and, against the real stack, a job
that prints its secrets: neither its live page, its search, its download nor its archive ever holds them."""

from __future__ import annotations

import re
import secrets
import time
import zlib
from html import unescape
from pathlib import Path

import pytest
import requests

from jobs import dlc, logmask, podlogs
from tests.support.waiting import wait_for

KEY = "wandb-" + "0123456789abcdef" * 2  # 38 characters, one token
PHRASE = "two words: and more"  # spaces and separators: only `=` / `:` + the rest of the line catches it
B64 = "c2VjcmV0LXZhbHVl=="  # ends in separators: caught by its core


@pytest.fixture(autouse=True)
def box_key(settings):
    settings.DLC_SECRET_BOX_KEY = "test-box-key"


def masked(line: str, *values: str) -> str:
    return logmask.mask([line], logmask.marks_for(values or (KEY, PHRASE, B64)))[0]


@pytest.mark.parametrize(("line", "expected"), [
    (f"WANDB_API_KEY={KEY}", "WANDB_API_KEY=********"),
    (f"{KEY}", "********"),
    (f"key is '{KEY}'.", "key is '********'."),
    (f'{{"key": "{KEY}", "n": 1}}', '{"key": "********", "n": 1}'),
    (f"\x1b[32m{KEY}\x1b[0m", "\x1b[32m********\x1b[0m"),
    (f"{KEY} twice {KEY}\r{KEY}", "******** twice ********\r********"),
    (f"args=({KEY},{KEY})", "args=(********,********)"),
    (f"password: {PHRASE}", "password: ********"),
    (f'pw = "{PHRASE}"', 'pw = "********"'),
    (f"b64 {B64} end", "b64 ********== end"),
])
def test_a_secret_value_printed_as_a_token_or_as_the_rest_of_an_assignment_is_masked(line, expected):
    assert masked(line) == expected


@pytest.mark.parametrize("line", [
    f"x{KEY}",  # glued to other characters
    f"{KEY}x",
    KEY[:-1],  # a prefix: another length
    KEY.upper(),  # another value
    "c2VjcmV0LXZhbHVl" + "x",
    f"{PHRASE} in the middle",  # not after `=` or `:`
    "loss=0.1234 step:1200 2026-03-01T12:00:00",
])
def test_a_value_glued_transformed_or_merely_similar_is_left_as_it_is(line):
    assert masked(line) == line


QA_VALUE = "s3cr3tVALUExyz123456"
URLISH = "ab/cd+ef?gh@ij.kl%2B"  # a value holding the finer cut's separators: the coarse cut still finds it


@pytest.mark.parametrize(("line", "expected"), [
    (f"url=https://x/?k={QA_VALUE}/%2B", "url=https://x/?k=********/%2B"),  # the QA's line
    (f"Authorization: Bearer {QA_VALUE}", "Authorization: Bearer ********"),
    (f"https://user:{QA_VALUE}@host/", "https://user:********@host/"),
    (f"GET /a/{QA_VALUE}.json?x={QA_VALUE}&y=1#{QA_VALUE}", "GET /a/********.json?x=********&y=1#********"),
    (f"token {URLISH} end", "token ******** end"),
    (f"u={URLISH}", "u=********"),
    (f"https://user:{KEY}@host", "https://user:********@host"),
])
def test_a_value_in_a_url_query_path_or_password_is_masked_and_so_is_one_holding_url_characters(line, expected):
    assert masked(line, QA_VALUE, URLISH, KEY) == expected


def test_the_finer_cut_leaves_ordinary_url_parts_alone():
    line = f"https://x/{QA_VALUE[:-1]}/?k={QA_VALUE}x&v=1.2.3"
    assert masked(line, QA_VALUE) == line


def test_marks_hold_fingerprints_and_lengths_never_the_values():
    marks = logmask.marks_for([KEY, PHRASE, B64, "short", None, 42, ""])
    assert marks["lengths"] == [len(B64.rstrip("=")), len(KEY)], "the forms that are one token"
    assert marks["phrase_lengths"] == [len(B64), len(PHRASE)], "with separators: only the rest of a line matches"
    assert len(marks["fingerprints"]) == 4 and all(re.fullmatch(r"[0-9a-f]{16}", f) for f in marks["fingerprints"])
    text = repr(marks)
    assert KEY not in text and "0123456789abcdef" not in text and "two words" not in text and "c2Vj" not in text
    assert logmask.marks_for(["short", "12345"]) == {}, "under MIN_CHARS: not fingerprinted, nothing masked"
    assert masked("short value", "short") == "short value"
    assert masked("sixsix", "sixsix") == "********", "MIN_CHARS itself is enough"


def test_merged_marks_mask_the_values_of_each_and_none_is_nothing():
    both = logmask.merged(logmask.marks_for([KEY]), None, logmask.marks_for([PHRASE, KEY]))
    assert logmask.mask([f"{KEY} x: {PHRASE}"], both) == ["******** x: ********"]
    assert both == logmask.marks_for([KEY, PHRASE]), "the same marks as of all the values at once"
    assert logmask.merged({}, None, {"lengths": [38]}) == {}


def test_the_fingerprints_are_keyed_by_the_secret_box_key(settings):
    marks = logmask.marks_for([KEY])
    assert logmask.mask([KEY], marks) == ["********"]
    settings.DLC_SECRET_BOX_KEY = "another-key"
    assert logmask.mask([KEY], marks) == [KEY], "a plain SHA-256 of a guess does not match either"
    assert logmask.marks_for([KEY]) != marks


def test_each_line_of_a_multi_line_secret_is_masked():
    pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END KEY-----\n"
    marks = logmask.marks_for([pem])
    assert logmask.mask(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "  BKcwggSjAgEAAoIBAQC7"], marks) == [
        "********", "  ********"]


def test_no_marks_cost_nothing_and_return_the_lines_themselves():
    lines = [KEY, "a"]
    assert logmask.mask(lines, {}) is lines and logmask.mask(lines, None) is lines
    assert logmask.masker({}) is None and logmask.masker({"lengths": [38]}) is None
    assert logmask.mask([], logmask.marks_for([KEY])) == []


def test_lines_shorter_than_every_secret_and_odd_marks_are_left_alone():
    marks = logmask.marks_for([KEY])
    assert logmask.mask(["", "x", "short line"], marks) == ["", "x", "short line"]
    odd = {"lengths": ["38", -1, None], "fingerprints": marks["fingerprints"]}  # a hand-edited row: no crash
    assert logmask.mask([KEY], odd) == [KEY]


def test_a_masker_is_made_once_for_a_stream_and_masks_each_batch():
    marker = logmask.masker(logmask.marks_for([KEY]))
    text = "".join(podlogs.stream([f"a {KEY}", "b", KEY], batch=2, masker=marker))
    assert text == "a ********\nb\n********\n"


# --- masking and colours ---------------------------------------------------------------------------------
# Masking is done on the raw line (the download keeps its codes) and the page renders the masked line's colours:
# a value is looked for both with the codes as separators and in the text a terminal shows (codes removed), and
# a masked span keeps the codes it held, after the mask, so the colours after it stay right.


@pytest.mark.parametrize(("line", "expected"), [
    (f"\x1b[31m{KEY}\x1b[0m", "\x1b[31m********\x1b[0m"),
    (f"\x1b[31m{KEY[:10]}\x1b[1;32m{KEY[10:]}\x1b[0m tail", "\x1b[31m********\x1b[1;32m\x1b[0m tail"),  # split
    (f"{KEY[:3]}\x1b[4m{KEY[3:20]}\x1b[24m{KEY[20:]}", "********\x1b[4m\x1b[24m"),  # split twice
    (f"token\x1b[31m{KEY}", "token\x1b[31m********"),  # a code between: a separator, as before
    (f"password: \x1b[1m{PHRASE}\x1b[0m", "password: \x1b[1m********\x1b[0m"),  # a phrase in colour
    (f"WANDB_API_KEY=\x1b[33m{KEY}\x1b[0m and {KEY}", "WANDB_API_KEY=\x1b[33m********\x1b[0m and ********"),
    (f"\x1b[32m{B64}\x1b[0m", "\x1b[32m********==\x1b[0m"),
    (f"\x1b]0;{KEY}\x07title", "\x1b]0;********\x07title"),  # in an OSC title: not shown, but downloaded
    (f"\x1b]8;;https://x.example/?t={KEY}\x1b\\link\x1b]8;;\x1b\\",
     "\x1b]8;;https://x.example/?t=********\x1b\\link\x1b]8;;\x1b\\"),  # a link's URL
])
def test_a_secret_between_or_split_by_colour_codes_is_masked_and_the_codes_stay(line, expected):
    assert masked(line) == expected


@pytest.mark.parametrize("line", [
    f"x\x1b[31m{KEY[:10]}\x1b[32m{KEY[10:]}",  # glued on the left, as the terminal shows it
    f"\x1b[31m{KEY[:10]}\x1b[0m {KEY[10:]}",  # split by a space: two tokens
])
def test_a_split_value_that_the_terminal_shows_glued_or_apart_is_not_a_token(line):
    assert masked(line) == line


def test_the_page_renders_a_masked_coloured_line_and_never_shows_a_split_value():
    cursor = podlogs.settled()
    raw = f"\x1b[31mERR {KEY[:10]}\x1b[1m{KEY[10:]}\x1b[0m ok"
    lines = logmask.mask([raw, "next"], logmask.marks_for([KEY]))
    chunk = podlogs.window(lines, cursor)
    shown = [str(t) for _, t in chunk.lines]
    assert shown == ['<span class="ansi-red">ERR ********</span> ok', "next"], "the bold set inside it has no text"
    assert KEY[:10] not in "".join(shown) and KEY[10:] not in "".join(shown)
    assert podlogs.window(lines, cursor, KEY[5:15]).lines == [], "nor does a search find it"


# --- how a line shows ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain", "plain"),
    ("\x1b[32mINFO\x1b[0m ready", "INFO ready"),
    ("\x1b[1;31mbold red\x1b[m", "bold red"),
    ("\x1b]0;title\x07after", "after"),
    ("\x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\", "link"),
    (" 10%|█         | 1/10\r 50%|█████     | 5/10\r100%|██████████| 10/10", "100%|██████████| 10/10"),
    ("100%|done\r", "100%|done"),
    ("windows line\r", "windows line"),
    ("\r", ""),
    ("a\r\x1b[32mb\x1b[0m", "b"),
    ("100%|done\r\x1b[0m", "100%|done"),  # a reset after the last update erases nothing
    ("\x1b(B\x1b[mreset by tput", "reset by tput"),
    ("cut off\x1b[3", "cut off"),
])
def test_a_line_shows_what_a_terminal_would(raw, shown):
    """As the page shows and searches it, and as the failure mail quotes it (plain text: jobs.notify_email)."""
    assert logmask.shown(raw) == shown


def test_carriage_returns_are_one_rule_for_the_page_and_the_metrics():
    from jobs import scalars

    assert logmask.after_carriage_return("x\rMETRIC step=1 loss=2\r") == "METRIC step=1 loss=2"
    assert scalars.parse_line("progress 10%\rMETRIC step=1 loss=2\r") == (1, {"loss": 2.0})


def test_the_page_shows_and_searches_the_line_as_shown_and_never_the_escape_codes():
    cursor = podlogs.settled()
    chunk = podlogs.window(["\x1b[31mError\x1b[0m: boom", " 1%\r100% done"], cursor, "31m")
    assert chunk.lines == [], "the codes are not searched"
    chunk = podlogs.window(["\x1b[31mError\x1b[0m: boom", " 1%\r100% done"], cursor)
    assert [str(t) for _, t in chunk.lines] == ['<span class="ansi-red">Error</span>: boom', "100% done"]
    assert [str(t) for _, t in podlogs.cut(["\x1b[1mA\x1b[0m", "b\rc"], "C").lines] == ["<mark>c</mark>"]
    assert [str(t) for _, t in podlogs.burst(["\x1b[1mA\x1b[0m"], cursor).lines] == ['<span class="ansi-bold">A</span>']
    assert "\x1b" not in "".join(str(t) for _, t in podlogs.burst(["\x1b[2K\x1b]0;t\x07\x1b[31"], cursor).lines)


# --- against the real stack -------------------------------------------------------------------------------


def shown_lines(html: str) -> str:
    return "\n".join(re.findall(r'<div class="ln"[^>]*>(.*?)</div>', html))


@pytest.mark.integration
def test_a_secret_a_job_prints_never_leaves_the_server(stack, member, workspace, settings, client):
    """A job whose command echoes its Secret-ticked env var (and variables sealed because their names look secret:
    HFTOKEN too, which only the job page once hid), run by localdlc as a process: the value really is in DLC's
    log (the control), and the job page's first view, its tail, its search, the download and the archived PodLog
    never hold it."""
    from jobs import apitokens
    from jobs.models import Job, PodLog

    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)
    # The box key of the stack's processes (its data dir's), as a web server shares it with the worker.
    settings.DLC_SECRET_BOX_KEY, settings.DATA_DIR = "", Path(stack.data_dir)
    wandb, hf, hft = f"wandb-{secrets.token_hex(16)}", f"hf_{secrets.token_hex(12)}", f"abc123{secrets.token_hex(4)}"
    command = ("echo first; echo WANDB_API_KEY=$WANDB_API_KEY; printf '\\033[32m%s\\033[0m\\n' \"$WANDB_API_KEY\"; "
               "echo \"{\\\"hf\\\": \\\"$HF_TOKEN\\\"}\"; echo HFTOKEN=$HFTOKEN; sleep 3; "
               "echo \"late $WANDB_API_KEY\"; echo done")
    body = {"DisplayName": "prints-secrets", "JobType": "PyTorchJob", "UserCommand": command,
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "registry.example/pytorch:2.3",
                          "EcsSpec": "ecs.g6.large"}],
            "Envs": {"HF_TOKEN": hf, "HFTOKEN": hft}, "SecretEnvs": {"WANDB_API_KEY": wandb}}
    # Through the stack's web server, so the submit is enqueued on the stack's Redis for its worker.
    _, token = apitokens.create_token(member, "test")
    answer = requests.post(f"{stack.url}/api/v1/jobs?workspace={workspace.pk}", json=body, timeout=30,
                           headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 201, answer.text
    job = Job.objects.get(pk=answer.json()["id"])

    def running_with_log():
        job.refresh_from_db()
        if job.status != "Running" or not job.pods:
            return None
        raw = dlc.get_pod_logs(workspace, job.dlc_job_id, job.pods[0]["PodId"])
        return raw if any(hft in line for line in raw) else None

    raw = wait_for(running_with_log, timeout=60, what="the job running and its secrets printed")
    assert any(wandb in line for line in raw) and any(hf in line for line in raw), "the control: the pod printed them"
    marks = job.secret_marks
    assert len(marks["fingerprints"]) == 3 and wandb not in repr(marks) and hf not in repr(marks)
    assert job.body["Envs"]["HFTOKEN"] == "********" and hft not in repr(job.body) and hft not in repr(marks)
    assert job.sealed_secrets == ""
    pod = job.pods[0]["PodId"]
    client.force_login(member)
    htmx = {"HTTP_HX_REQUEST": "true"}

    def page_texts() -> list[str]:
        time.sleep(podlogs.SETTLE.total_seconds())
        panel = client.get(f"/jobs/{job.pk}/logs", **htmx).text
        start = podlogs.encode_cursor(podlogs._floor(job, pod))
        tail = client.get(f"/jobs/{job.pk}/pods/{pod}/logs?since={start}", **htmx).text
        searched = [client.get(f"/jobs/{job.pk}/pods/{pod}/logs", {"q": q}, **htmx).text
                    for q in ("WANDB", wandb, wandb[:20], "hf")]
        download = b"".join(client.get(f"/jobs/{job.pk}/pods/{pod}/logs/download").streaming_content).decode()
        return [panel, tail, *searched, download]

    live = page_texts()
    assert "WANDB_API_KEY=********" in live[0] and "********" in live[1], "the lines are there, masked"
    assert "\x1b[32m********\x1b[0m" in live[-1], "the download keeps the colour codes, masks the value"
    assert '{"hf": "********"}' in live[-1] and "HFTOKEN=********" in live[-1]
    assert "<mark>" not in live[3] and "<mark>" not in live[4], "searching for the value finds nothing"
    assert "<mark>WANDB</mark>_API_KEY=********" in live[2] and '"<mark>hf</mark>": "********"' in unescape(live[5])
    for text in [*live[:3], *map(shown_lines, live[3:-1]), live[-1]]:  # a search's page echoes what was typed
        assert wandb not in unescape(text) and hf not in unescape(text) and hft not in unescape(text)
        assert wandb[6:26] not in unescape(text), "no part of it either"

    wait_for(lambda: Job.objects.filter(pk=job.pk, logs_archived_at__isnull=False).exists(), timeout=60,
             what="the job ended and its log archived")
    job.refresh_from_db()
    stored = zlib.decompress(bytes(PodLog.objects.get(job=job, pod_id=pod).content)).decode()
    assert "late ********" in stored and "done" in stored
    ended = page_texts()
    for text in [stored, *ended[:3], *map(shown_lines, ended[3:-1]), ended[-1]]:
        assert wandb not in unescape(text) and hf not in unescape(text) and hft not in unescape(text)
    assert "late ********" in ended[-1]
