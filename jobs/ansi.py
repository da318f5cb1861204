"""A log line's ANSI colours as HTML: SGR codes become <span class="ansi-…"> around escaped text, every other
escape sequence (cursor moves, erase line, OSC titles and links' markers, charset selects) is dropped.

Only classes come from the log, never a style attribute or a colour value, so the page stays safe under a
strict CSP and the palette is the console's (static/css/console.css, "log colours"), picked to stay readable
on the log box's dark background. What is rendered: foreground 30-37/90-97, background 40-47/100-107, bold (1),
dim (2), italic (3), underline (4) and their resets (0, 22, 23, 24, 39, 49). 256-colour (38;5;n / 48;5;n) and
truecolour (38;2;r;g;b) are mapped to the nearest of xterm's 16 colours (a palette of 16 is what stays readable;
the exact shade is not kept). Anything else (blink, inverse, conceal, strike, fonts) is ignored, as a terminal
that lacks it would.

As in a terminal, the colours in force at a line's end carry on to the next line: render() takes the style the
line starts in and returns the one it ends in; every span is closed at the line's end, so each line is valid
HTML on its own. A line with carriage returns shows its last part that has any text (tqdm's last update), in the
colours in force there: the codes in the parts it overwrote still count, as they would on a terminal.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from django.utils.safestring import SafeString, mark_safe

# One escape sequence, as a terminal would consume it: CSI (its parameters and final byte captured; one cut off by
# the line's end or by another ESC is consumed without a final byte), OSC up to BEL or ST (or whatever ends the
# line or starts the next sequence), the two- and three-byte escapes (`ESC ( B` of `tput sgr0`), or a lone ESC.
SEQUENCE = re.compile(r"\x1b(?:\[([0-?]*)[ -/]*([@-~]|$|(?=\x1b))|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~]|)")
# SGR codes only (to follow the colours through lines without rendering them).
_SGR = re.compile(r"\x1b\[([0-9;:]*)m")

NAMES = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
# xterm's 16 colours: what a 256-colour or truecolour code is measured against to find the nearest of the 16.
_XTERM16 = ((0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205),
            (229, 229, 229), (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255),
            (255, 0, 255), (0, 255, 255), (255, 255, 255))


class Style(NamedTuple):
    """The SGR state: colours as 0-15 (8-15 the bright ones), None for the default."""
    fg: int | None = None
    bg: int | None = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False

    def sgr(self) -> str:
        """The SGR parameters that set this style from the default ("" for the default): carried in a URL."""
        codes = [str(n) for n, on in ((1, self.bold), (2, self.dim), (3, self.italic), (4, self.underline)) if on]
        if self.fg is not None:
            codes.append(str(30 + self.fg if self.fg < 8 else 82 + self.fg))
        if self.bg is not None:
            codes.append(str(40 + self.bg if self.bg < 8 else 92 + self.bg))
        return ";".join(codes)


DEFAULT = Style()


def _colour_name(index: int) -> str:
    return f"bright-{NAMES[index - 8]}" if index >= 8 else NAMES[index]


@lru_cache(maxsize=512)
def classes(style: Style) -> str:
    """The span's class attribute value for a style; "" for the default."""
    names = [name for name, on in (("ansi-bold", style.bold), ("ansi-dim", style.dim), ("ansi-italic", style.italic),
                                   ("ansi-underline", style.underline)) if on]
    if style.fg is not None:
        names.append(f"ansi-{_colour_name(style.fg)}")
    if style.bg is not None:
        names.append(f"ansi-bg-{_colour_name(style.bg)}")
    return " ".join(names)


@lru_cache(maxsize=4096)
def nearest(red: int, green: int, blue: int) -> int:
    """The nearest of xterm's 16 colours (0-15), by a distance weighted for the eye ("redmean")."""
    def distance(colour: tuple[int, int, int]) -> float:
        mean = (red + colour[0]) / 2
        dr, dg, db = red - colour[0], green - colour[1], blue - colour[2]
        return (2 + mean / 256) * dr * dr + 4 * dg * dg + (2 + (255 - mean) / 256) * db * db
    return min(range(16), key=lambda i: distance(_XTERM16[i]))


def _cube(level: int) -> int:
    return 0 if level == 0 else 55 + 40 * level


def from_256(n: int) -> int | None:
    """A 256-colour index as one of the 16; None when out of range (the code is then ignored)."""
    if 0 <= n < 16:
        return n
    if 16 <= n < 232:
        n -= 16
        return nearest(_cube(n // 36), _cube(n // 6 % 6), _cube(n % 6))
    if 232 <= n < 256:
        grey = 8 + 10 * (n - 232)
        return nearest(grey, grey, grey)
    return None


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) < 10 else None


def _extended(args: list[str]) -> tuple[int | None, bool, int]:
    """A 38/48 colour from the parameters after it: (colour, whether one was given, parameters used)."""
    kind = _number(args[0]) if args else None
    if kind == 5 and len(args) >= 2:
        n = _number(args[1])
        return (from_256(n) if n is not None else None), n is not None and n < 256, 2
    if kind == 2 and len(args) >= 4:
        rgb = [_number(a) for a in args[1:4]]
        if all(c is not None and c < 256 for c in rgb):
            return nearest(*rgb), True, 4
        return None, False, 4
    return None, False, len(args)  # malformed: a terminal drops the rest of the sequence too


@lru_cache(maxsize=4096)
def apply(params: str, style: Style) -> Style:
    """The style after one SGR sequence's parameters ("" is a reset, as is 0); unknown codes are ignored. Cached: a
    log repeats its few codes on every line."""
    fg, bg, bold, dim, italic, underline = style
    parts = params.split(";")
    i = 0
    while i < len(parts):
        part, i = parts[i], i + 1
        if ":" in part:  # ITU form (38:2::r:g:b, 38:5:n, 4:3): its sub-parameters are its own
            sub = part.split(":")
            head = _number(sub[0])
            if head in (38, 48):
                args = sub[1:]
                if args and args[0] == "2" and len(args) == 5:  # with the colour space id (often empty)
                    args = [args[0], *args[2:]]
                colour, given, _ = _extended(args)
                if given:
                    fg, bg = (colour, bg) if head == 38 else (fg, colour)
            elif head == 4:
                underline = sub[1:2] != ["0"]
            continue
        code = 0 if part == "" else _number(part)
        if code is None:
            continue
        if code == 0:
            fg, bg, bold, dim, italic, underline = DEFAULT
        elif code == 1:
            bold = True
        elif code == 2:
            dim = True
        elif code == 3:
            italic = True
        elif code == 4:
            underline = True
        elif code == 22:
            bold = dim = False
        elif code == 23:
            italic = False
        elif code == 24:
            underline = False
        elif 30 <= code <= 37:
            fg = code - 30
        elif code == 39:
            fg = None
        elif 40 <= code <= 47:
            bg = code - 40
        elif code == 49:
            bg = None
        elif 90 <= code <= 97:
            fg = code - 82
        elif 100 <= code <= 107:
            bg = code - 92
        elif code in (38, 48):
            colour, given, used = _extended(parts[i:])
            i += used
            if given:
                fg, bg = (colour, bg) if code == 38 else (fg, colour)
    return Style(fg, bg, bold, dim, italic, underline)


def advance(line: str, style: Style = DEFAULT) -> Style:
    """The style at the end of the line, without rendering it."""
    if "\x1b" not in line:
        return style
    return _advance(tuple(_SGR.findall(line)), style)


@lru_cache(maxsize=4096)
def _advance(codes: tuple[str, ...], style: Style) -> Style:
    for params in codes:
        style = apply(params, style)
    return style


def _resets(line: str) -> bool:
    return any(p == "" or p == "0" or p.startswith("0;") or ";0;" in p or p.endswith(";0")
               for p in _SGR.findall(line))


# How far back style_at looks for a reset (beyond, it starts from the default there): bounded work per view.
LOOKBACK = 10_000


def style_at(lines: Sequence[str], index: int, lookback: int = LOOKBACK) -> Style:
    """The style in force at the start of lines[index]: from the last line before it with a full reset (0), or from
    `lookback` lines before it, applied forward. Logs that colour a word and reset it cost one line's look."""
    start = max(0, index - lookback)
    if "\x1b" not in "".join(lines[start:index]):  # a log without codes (most): no look line by line
        return DEFAULT
    at = index - 1
    while at >= start and not ("\x1b" in lines[at] and _resets(lines[at])):
        at -= 1
    style = DEFAULT
    for line in lines[max(at, start):index]:
        style = advance(line, style)
    return style


Run = tuple[Style, str]


def runs(line: str, style: Style = DEFAULT) -> tuple[list[Run], Style]:
    """What a terminal shows of the line, as (style, text) runs, and the style at its end. After a carriage
    return, the part shown is the last one with any text (tqdm's updates; a trailing `\\r` erases nothing)."""
    # split() gives text, then each sequence's two groups (CSI parameters and final byte, None for other sequences).
    parts = SEQUENCE.split(line) if "\x1b" in line else [line]
    shown: list[Run] = []
    part: list[Run] = []
    for n in range(0, len(parts), 3):
        text = parts[n]
        if "\r" in text:
            _text(text, style, shown, part)
        elif text:
            if part and part[-1][0] == style:
                part[-1] = (style, part[-1][1] + text)
            else:
                part.append((style, text))
        if n + 2 < len(parts) and parts[n + 2] == "m":
            style = apply(parts[n + 1], style)
    return (part if part else shown), style


def _text(text: str, style: Style, shown: list[Run], part: list[Run]) -> None:
    """Add text with carriage returns to the part being written (`part`); at a `\\r`, a part with text becomes
    the one shown."""
    for n, piece in enumerate(text.split("\r")):
        if n and part:  # a carriage return: the part written so far is what shows, unless overwritten
            shown[:] = part
            part.clear()
        if piece:
            if part and part[-1][0] == style:
                part[-1] = (style, part[-1][1] + piece)
            else:
                part.append((style, piece))


def plain(line: str) -> str:
    """The text a terminal shows of the line: what the page shows and searches, and a mail quotes. The same text
    as runs(), faster: a sequence holds no `\\r` of the text, so dropping them first leaves the same parts."""
    if "\x1b" in line:
        line = SEQUENCE.sub("", line)
    if "\r" not in line:
        return line
    return line.rstrip("\r").rsplit("\r", 1)[-1]


def render(line: str, style: Style = DEFAULT, query: str = "") -> tuple[SafeString, Style]:
    """The line as HTML (escaped text, coloured spans, each case-insensitive match of `query` in <mark>) and the
    style it ends in. Matches are found in the text shown, never in the codes; a match across a colour change
    is marked in pieces, one per span."""
    if "\x1b" not in line and "\r" not in line:
        if not query and style == DEFAULT:  # most lines of most logs
            return mark_safe(html.escape(line)), style  # noqa: S308 - escaped
        pieces, end = ([(style, line)] if line else []), style
    else:
        pieces, end = runs(line, style)
    text = "".join(t for _, t in pieces)
    marks = _matches(text, query)
    out: list[str] = []
    at = 0  # Django's escape() is the same html.escape, behind a wrapper that costs more than it on a long log
    for run_style, run in pieces:
        names = classes(run_style)
        if names:
            out.append(f'<span class="{names}">')
        out.append(_marked(run, at, marks))
        if names:
            out.append("</span>")
        at += len(run)
    return mark_safe("".join(out)), end  # noqa: S308 - the text is escaped in _marked, the classes are ours


def _matches(text: str, query: str) -> list[tuple[int, int]]:
    if not query:
        return []
    folded, needle = text.casefold(), query.casefold()
    if len(folded) != len(text):  # casefold changed lengths (e.g. ß): mark nothing rather than the wrong span
        return []
    found, start = [], 0
    while (at := folded.find(needle, start)) != -1:
        found.append((at, at + len(needle)))
        start = at + len(needle)
    return found


def _marked(run: str, offset: int, marks: list[tuple[int, int]]) -> str:
    """The run escaped, the parts of it inside a match in <mark> (the run starts at `offset` of the line's text)."""
    if not marks:
        return html.escape(run)
    end = offset + len(run)
    out, done = [], offset
    for at, until in marks:
        if until <= offset or at >= end:
            continue
        at, until = max(at, offset), min(until, end)
        marked = html.escape(run[at - offset:until - offset])
        out += [html.escape(run[done - offset:at - offset]), f"<mark>{marked}</mark>"]
        done = until
    out.append(html.escape(run[done - offset:]))
    return "".join(out)
