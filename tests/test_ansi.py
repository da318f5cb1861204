"""jobs.ansi: a log line's SGR colours as spans with classes (nested, reset, unknown codes, 256 and truecolour),
its text escaped, search marks on the text shown, other escape sequences dropped (cut-off ones too), and the
colours carried from line to line as a terminal does."""

from __future__ import annotations

import re

import pytest

from jobs import ansi
from jobs.ansi import DEFAULT, Style


def html(line: str, style: Style = DEFAULT, query: str = "") -> str:
    return str(ansi.render(line, style, query)[0])


def test_a_coloured_word_is_a_span_with_a_class_and_the_rest_of_the_line_is_plain():
    assert html("\x1b[31mError\x1b[0m: boom") == '<span class="ansi-red">Error</span>: boom'
    assert html("\x1b[92mok\x1b[39m \x1b[44mbg\x1b[49m") == \
        '<span class="ansi-bright-green">ok</span> <span class="ansi-bg-blue">bg</span>'
    assert html("\x1b[1mb\x1b[22m \x1b[2md\x1b[22m \x1b[3mi\x1b[23m \x1b[4mu\x1b[24m \x1b[97;105mw") == (
        '<span class="ansi-bold">b</span> <span class="ansi-dim">d</span> <span class="ansi-italic">i</span> '
        '<span class="ansi-underline">u</span> <span class="ansi-bright-white ansi-bg-bright-magenta">w</span>')
    assert html("plain & simple") == "plain &amp; simple"


def test_nested_codes_add_up_and_each_reset_undoes_only_its_part():
    line = "\x1b[1m\x1b[33mA\x1b[4mB\x1b[39mC\x1b[24mD\x1b[22mE"
    assert html(line) == ('<span class="ansi-bold ansi-yellow">A</span>'
                          '<span class="ansi-bold ansi-underline ansi-yellow">B</span>'
                          '<span class="ansi-bold ansi-underline">C</span><span class="ansi-bold">D</span>E')
    assert html("\x1b[1;2;3;4;31;42mx\x1b[mY") == \
        '<span class="ansi-bold ansi-dim ansi-italic ansi-underline ansi-red ansi-bg-green">x</span>Y', "ESC[m resets"
    assert html("\x1b[31mx\x1b[0;32my") == '<span class="ansi-red">x</span><span class="ansi-green">y</span>'


@pytest.mark.parametrize(("line", "expected"), [
    ("\x1b[5;7;8;9;53mx", "x"),  # blink, inverse, conceal, strike, overline: not rendered
    ("\x1b[999;31mx", '<span class="ansi-red">x</span>'),
    ("\x1b[99999999999999999999;31mx", '<span class="ansi-red">x</span>'),  # a huge number is ignored, not a crash
    ("\x1b[38;5;300;31mx", '<span class="ansi-red">x</span>'),  # no 256-colour 300: that code alone is ignored
    ("\x1b[38;5mx", "x"),  # 38 cut short: the rest of the sequence goes with it, as in xterm
    ("\x1b[38;2;1;2mx", "x"),
    ("\x1b[38;7;1mx", "x"),
    ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
])
def test_unknown_or_malformed_codes_are_ignored(line, expected):
    assert html(line) == expected


@pytest.mark.parametrize(("code", "cls"), [
    ("38;5;1", "ansi-red"), ("38;5;9", "ansi-bright-red"), ("38;5;196", "ansi-bright-red"),
    ("38;5;28", "ansi-green"), ("38;5;21", "ansi-blue"), ("38;5;208", "ansi-yellow"), ("38;5;232", "ansi-black"),
    ("38;5;244", "ansi-bright-black"), ("38;5;231", "ansi-bright-white"), ("38;5;255", "ansi-white"),
    ("48;5;88", "ansi-bg-red"),
    ("38;2;255;0;0", "ansi-bright-red"), ("38;2;10;200;30", "ansi-green"), ("38;2;250;250;250", "ansi-bright-white"),
    ("48;2;0;0;0", "ansi-bg-black"), ("38:2::0:205:205", "ansi-cyan"), ("38:5:4", "ansi-blue"),
])
def test_256_and_truecolour_map_to_the_nearest_of_the_16(code, cls):
    assert html(f"\x1b[{code}mx") == f'<span class="{cls}">x</span>'


def test_256_colour_codes_keep_the_codes_after_them():
    assert html("\x1b[38;5;196;1;48;2;0;0;238mx") == '<span class="ansi-bold ansi-bright-red ansi-bg-blue">x</span>'
    assert html("\x1b[4:3mcurly\x1b[4:0mnone") == '<span class="ansi-underline">curly</span>none'


def test_text_inside_colours_is_escaped_and_no_style_or_markup_comes_from_the_log():
    line = '\x1b[31m<script>alert("x")</script> & \x1b[0m<b onclick="x">'
    out = html(line)
    assert out == ('<span class="ansi-red">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; </span>'
                   '&lt;b onclick=&quot;x&quot;&gt;')
    assert "style=" not in html("\x1b[38;2;1;2;3;48;2;4;5;6mx"), "only the console's classes, safe under a CSP"
    for tag in re.findall(r"<[^>]+>", html("\x1b[1;38;5;99;48;5;200;4mx\x1b[0m")):
        assert re.fullmatch(r'<span class="ansi-[a-z -]+">|</span>', tag), tag


@pytest.mark.parametrize(("line", "expected"), [
    ("abc\x1b[31", "abc"),  # a CSI cut off by the line's end
    ("abc\x1b[", "abc"),
    ("abc\x1b", "abc"),  # a lone ESC
    ("a\x1b[31\x1b[32mb", 'a<span class="ansi-green">b</span>'),  # cut off by the next sequence
    ("\x1b]0;title\x07text", "text"),  # OSC title
    ("\x1b]0;title, never ended", ""),
    ("\x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 link markers
    ("\x1b(B\x1b[mtput sgr0", "tput sgr0"),  # charset select
    ("\x1b[2K\x1b[1Gerase and move\x1b[A", "erase and move"),  # cursor moves, erase line
    ("\x1b7saved\x1b8", "saved"),
])
def test_other_and_unterminated_escape_sequences_are_dropped(line, expected):
    assert html(line) == expected
    assert "\x1b" not in ansi.plain(line)


def test_every_span_closes_at_the_line_end_and_the_colours_carry_to_the_next_line():
    first, style = ansi.render("\x1b[1;31mError: traceback follows")
    assert str(first) == '<span class="ansi-bold ansi-red">Error: traceback follows</span>'
    assert style == Style(fg=1, bold=True)
    second, style = ansi.render("  File x.py, line 3", style)
    assert str(second) == '<span class="ansi-bold ansi-red">  File x.py, line 3</span>'
    third, style = ansi.render("end\x1b[0m", style)
    assert str(third) == '<span class="ansi-bold ansi-red">end</span>' and style == DEFAULT
    assert ansi.render("", Style(fg=2))[0] == "", "an empty line opens no span"
    assert ansi.advance("\x1b[32mx\x1b[1m", DEFAULT) == Style(fg=2, bold=True) == ansi.render("\x1b[32mx\x1b[1m")[1]


def test_the_style_before_a_line_is_found_from_the_last_reset_or_the_lookback():
    lines = ["\x1b[31mred", "still red", "\x1b[0mplain \x1b[1mbold", "\x1b[4munder", "x"]
    assert ansi.style_at(lines, 0) == DEFAULT
    assert ansi.style_at(lines, 2) == Style(fg=1)
    assert ansi.style_at(lines, 4) == Style(bold=True, underline=True)
    assert ansi.style_at(["\x1b[31m", *["x"] * 10, "y"], 11, lookback=5) == DEFAULT, "beyond the lookback: default"


def test_a_carriage_return_shows_the_last_update_in_the_colours_set_before_it():
    assert html("\x1b[32m 10%\r 50%\r100%\x1b[0m") == '<span class="ansi-green">100%</span>'
    assert html("100%|done\r\x1b[0m") == "100%|done", "a trailing \\r and a reset erase nothing"
    assert ansi.plain("100%|done\r\x1b[0m") == "100%|done"
    assert html("a\r\x1b[32mb\x1b[0m") == '<span class="ansi-green">b</span>'
    assert html(" 1%\r100% done") == "100% done" and html("\r") == ""


def test_search_matches_the_text_shown_and_marks_it_inside_the_colours():
    assert html("\x1b[31mError\x1b[0m: boom", query="31m") == '<span class="ansi-red">Error</span>: boom'
    assert html("\x1b[31mError\x1b[0m: boom", query="error: b") == \
        '<span class="ansi-red"><mark>Error</mark></span><mark>: b</mark>oom', "a match across a colour change"
    assert html("\x1b[32m<ok> ok\x1b[0m", query="OK") == \
        '<span class="ansi-green">&lt;<mark>ok</mark>&gt; <mark>ok</mark></span>'
    assert html("\x1b[1mStraße", query="SS") == '<span class="ansi-bold">Straße</span>', "casefold changed the length"
    assert ansi.plain("\x1b[31mERR\x1b[32mOR\x1b[0m") == "ERROR"


def test_the_style_round_trips_through_the_codes_the_tail_carries():
    for style in (DEFAULT, Style(fg=1), Style(fg=9, bg=12, bold=True, dim=True, italic=True, underline=True),
                  Style(bg=0), Style(fg=15, bg=7)):
        assert ansi.apply(style.sgr(), DEFAULT) == style or style == DEFAULT
    assert DEFAULT.sgr() == ""
