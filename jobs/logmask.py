"""What of a pod's log may leave the server, and how a line shows: a job's secret values masked, ANSI escapes
and tqdm's carriage returns resolved as a terminal would.

The console never keeps a secret value (it is sealed on its way to the worker and erased once CreateJob is
answered), so it cannot search the log for it. At submit, while the values are unsealed, it keeps their keyed
fingerprints instead (Job.secret_marks: HMAC-SHA256 under a key derived from the secret box key, truncated,
and the values' lengths). Which values are secrets is one rule (spec.looks_like_secret, plus the ones ticked
Secret): a job imported from DLC gets the marks at import, from the values DLC shows of it under such names
(jobs.lifecycle.import_secrets), and a job saved before its names were sealed gets those of its body at submit.
A log line is then cut into tokens, and each token of a listed
length whose fingerprint is listed is replaced by MASK; so is the rest of a line after a `=` or `:` (quotes and
spaces around it dropped) when it is a listed value: that catches a value with spaces or separators in it,
`WANDB_API_KEY=...` or `password: "two words"`.

Tokens are cut twice: at SEPARATORS, and finer, also at URL_SEPARATORS (`/ ? & # @ + % .`), and a token is a
value's if it is one under either cut: the finer cut finds a value in a URL (`?k=VALUE/%2B`, `user:VALUE@host`),
the coarse one a value that itself holds such characters (`ab/cd+ef==`, a JWT's dots).

What is caught: the value printed as a whole token (echo, a repr, key=value, JSON, between ANSI colour codes or
split by one, as the terminal shows it, a URL's query, path or password), and a value ending in separators
(base64's `==`) as its core. Masking is done on the raw line (the download keeps its codes), and the page renders
the masked line's colours (jobs.ansi), so no order of the two can show a value. What is not: a
value glued to other characters (`tokenABC...`), printed transformed (base64, URL-encoded, JSON-escaped,
hex), cut across lines or tokens, or shorter than MIN_CHARS (too short to tell from ordinary words); a job
submitted before the marks existed has none. The download is masked too; so is the archive, as it is written.
A database dump alone cannot turn fingerprints back into values: the key is not in the database.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from typing import Any

from jobs import ansi, secretbox

MASK = "********"
# Shorter values are not fingerprinted: "secret", "admin1" would mask ordinary words all over a log.
MIN_CHARS = 6
# 64 bits of HMAC: no ordinary token collides with a job's few values by chance.
FINGERPRINT_HEX = 16
# A job's forms of values fingerprinted at most (a multi-line value counts each line): a bound on the row.
MAX_FORMS = 200
# Distinct tokens whose verdict a masker remembers (Masker._secret).
_SEEN_MAX = 50_000
_PURPOSE = "jobs.logmask fingerprints v1"

SEPARATORS = "\"'=:,;()[]{}<>"  # and whitespace
# The finer cut's extra separators: what glues a value into a URL (path, query, fragment, userinfo, encoding).
URL_SEPARATORS = "/?&#@+%."
# Tokens are what lies between separators: whitespace, punctuation around values, and whole ANSI sequences (a
# value coloured by `\x1b[32m...\x1b[0m` is a token of its own: a line's ANSI sequences are first blanked in
# place, so a token's position in the blanked text is its position in the line); a line with sequences is also
# cut as a terminal shows it (Masker._coloured).
_TOKEN_CHAR = f"[^\\s{re.escape(SEPARATORS)}]"
_FINE_CHAR = f"[^\\s{re.escape(SEPARATORS + URL_SEPARATORS)}]"
_ASSIGN = re.compile("[=:]")


def _key() -> bytes:
    return secretbox.derived_key(_PURPOSE)


def _forms(value: str) -> set[str]:
    """The forms of a secret value a log line can show: the value, its core without separators at its ends
    (base64's `==`, a trailing newline), and each line of a multi-line value (a PEM key) and its core."""
    pieces = [value, *value.splitlines()] if "\n" in value else [value]
    forms = set()
    for piece in pieces:
        for form in (piece.strip(), piece.strip(SEPARATORS + " \t\r\n")):
            if len(form) >= MIN_CHARS:
                forms.add(form)
    return forms


def _has_separator(text: str) -> bool:
    return any(c.isspace() or c in SEPARATORS for c in text)


def marks_for(values: Iterable[Any]) -> dict[str, Any]:
    """The fingerprints and lengths of the secret values (non-strings and short values left out); {} for none.
    `lengths`: of the forms that are one token; `phrase_lengths`: of those with spaces or separators in them,
    which only the rest of a line after `=` or `:` can match."""
    key = _key()
    forms: set[str] = set()
    for value in values:
        if isinstance(value, str):
            forms |= _forms(value)
    forms = set(sorted(forms, key=len, reverse=True)[:MAX_FORMS])
    if not forms:
        return {}
    return {"lengths": sorted({len(f) for f in forms if not _has_separator(f)}),
            "phrase_lengths": sorted({len(f) for f in forms if _has_separator(f)}),
            "fingerprints": sorted(_fingerprint(key, f) for f in forms)}


def merged(*marks: dict[str, Any] | None) -> dict[str, Any]:
    """One job's marks from several (its sealed secrets' and those DLC echoed of it): any value of either is masked.
    {} for none."""
    present = [one for one in marks if one and one.get("fingerprints")]
    if not present:
        return {}
    return {"lengths": sorted(set().union(*(_lengths(one, "lengths") for one in present))),
            "phrase_lengths": sorted(set().union(*(_lengths(one, "phrase_lengths") for one in present))),
            "fingerprints": sorted({str(f) for one in present for f in one["fingerprints"]})}


def _fingerprint(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:FINGERPRINT_HEX]


def _lengths(marks: dict[str, Any], name: str) -> frozenset[int]:
    return frozenset(n for n in marks.get(name) or [] if isinstance(n, int) and n > 0)


class Masker:
    """The masking of one job's lines (its key and fingerprints ready): for a stream, made once, used per chunk."""

    def __init__(self, marks: dict[str, Any]) -> None:
        self.lengths = _lengths(marks, "lengths")
        self.phrase_lengths = _lengths(marks, "phrase_lengths")
        self.fingerprints = frozenset(str(f) for f in marks.get("fingerprints") or [])
        self.shortest = min(self.lengths | self.phrase_lengths, default=0)
        self.shortest_phrase = min(self.phrase_lengths, default=0)
        self.key = _key()
        self.seen: dict[str, bool] = {}
        self.token_re = _token_re(_TOKEN_CHAR, self.lengths)
        self.fine_re = _token_re(_FINE_CHAR, self.lengths)

    def _secret(self, text: str) -> bool:
        # Logs repeat their words ("throughput", a path): each is hashed once per masker, up to a bound.
        known = self.seen.get(text)
        if known is None:
            if len(self.seen) >= _SEEN_MAX:
                self.seen.clear()
            known = self.seen[text] = _fingerprint(self.key, text) in self.fingerprints
        return known

    def line(self, text: str) -> str:
        if len(text) < self.shortest:
            return text
        if "\x1b" in text:
            return self._coloured(text)
        if self.lengths:
            text = _replace(text, self._token_spans(text))
        if self.phrase_lengths and len(text) > self.shortest_phrase:
            span = self._phrase_span(text)
            if span is not None:
                text = _replace(text, [span])
        return text

    def _token_spans(self, blank: str) -> list[tuple[int, int]]:
        spans = self._spans(self.token_re, blank)
        # The finer cut only where it cuts differently. Most lines hold a `.` or `/`, so it is not free: 100k mixed
        # lines, 4 values, 0.33 s -> 0.55 s; still in C, and each distinct token is hashed once per masker.
        if _URL_CHAR_RE.search(blank):
            fine = self._spans(self.fine_re, blank)
            if fine:
                spans = _outermost(spans + fine)
        return spans

    def _coloured(self, text: str) -> str:
        """A line with escape sequences: its values are looked for twice, with each sequence as a separator (a value
        right after a colour code, `\x1b[1mVALUE`) and in the text a terminal shows, sequences removed (a value
        split by a colour change, `VA\x1b[31mLUE`, or coloured after `password: `). A masked span keeps the
        sequences it held, after MASK: the colours after it stay as the program set them."""
        if "\x1b]" in text:  # an OSC's text (a title, a link's URL) is not shown, but the download keeps it
            text = _OSC.sub(lambda osc: osc.group(1) + self.line(osc.group(2)) + osc.group(3), text)
        plain = ansi.SEQUENCE.sub("", text)
        spans: list[tuple[int, int]] = []
        found: list[tuple[int, int]] = []  # in the plain text
        if self.lengths:
            spans += self._token_spans(ansi.SEQUENCE.sub(lambda code: " " * len(code.group()), text))
            found += self._token_spans(plain)
        if self.phrase_lengths and len(plain) > self.shortest_phrase:
            phrase = self._phrase_span(plain)
            if phrase is not None:
                found.append(phrase)
        if not spans and not found:  # most lines: no mapping built
            return text
        sequences = [code.span() for code in ansi.SEQUENCE.finditer(text)]
        if found:
            where: list[int] = []  # the position in `text` of each character of the plain text
            done = 0
            for at, end in [*sequences, (len(text), len(text))]:
                where.extend(range(done, at))
                done = end
            spans += [(where[at], where[end - 1] + 1) for at, end in found]
        return _replace(text, _union(spans), sequences)

    def _spans(self, token_re: re.Pattern[str], blank: str) -> list[tuple[int, int]]:
        return [found.span() for found in token_re.finditer(blank)
                if len(found.group()) in self.lengths and self._secret(found.group())]

    def _phrase_span(self, text: str) -> tuple[int, int] | None:
        """Where the rest of the line after a `=` or `:` is, when it is a secret value with spaces or separators in
        it."""
        for found in _ASSIGN.finditer(text):
            rest = text[found.end():]
            if len(rest) < self.shortest_phrase:
                break
            value = rest.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            if value and len(value) in self.phrase_lengths and self._secret(value):
                at = found.end() + rest.index(value)
                return at, at + len(value)
        return None

    def lines(self, lines: list[str]) -> list[str]:
        return [self.line(text) for text in lines]


_URL_CHAR_RE = re.compile(f"[{re.escape(URL_SEPARATORS)}]")
# An OSC sequence (as jobs.ansi.SEQUENCE reads one): its opening, its text (no ESC in it), its end if any.
_OSC = re.compile(r"(\x1b\])([^\x07\x1b]*)((?:\x07|\x1b\\)?)")


def _token_re(char: str, lengths: frozenset[int]) -> re.Pattern[str]:
    # Only the tokens of a length in the listed range are even looked at (a regex, in C: a split of every line in
    # Python costs twice as much on a long log).
    return re.compile(f"(?<!{char}){char}{{{min(lengths, default=1)},{max(lengths, default=1)}}}(?!{char})")


def _replace(text: str, spans: list[tuple[int, int]], sequences: list[tuple[int, int]] | None = None) -> str:
    """The text with each span (in order, apart) as MASK, followed by the escape sequences the span held."""
    if not spans:
        return text
    out, done = [], 0
    for at, end in spans:
        out += [text[done:at], MASK, *(text[a:b] for a, b in sequences or () if at <= a and b <= end)]
        done = end
    return "".join(out) + text[done:]


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans in order, overlapping ones merged."""
    merged: list[tuple[int, int]] = []
    for at, end in sorted(spans):
        if merged and at < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((at, end))
    return merged


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans in order, those inside an earlier one dropped: a coarse token that is a value may hold a finer
    token that is another value (or the same value's core)."""
    kept: list[tuple[int, int]] = []
    for at, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if not kept or at >= kept[-1][1]:
            kept.append((at, end))
    return kept


def masker(marks: dict[str, Any] | None) -> Masker | None:
    """The masking of a job's lines, or None when it has no marks (nothing to do, nothing to pay)."""
    if not marks or not marks.get("fingerprints"):
        return None
    return Masker(marks)


def mask(lines: list[str], marks: dict[str, Any] | None) -> list[str]:
    """The lines with every secret value of the job (see the module's docstring for what is caught) as MASK;
    `lines` itself when the job has no marks."""
    masking = masker(marks)
    return lines if masking is None else masking.lines(lines)


# --- how a line shows ------------------------------------------------------------------------------------


def after_carriage_return(text: str) -> str:
    """What a terminal shows of a line with carriage returns (tqdm's progress updates): the text after the last
    one; a trailing one (a line ended by CRLF, or by a last `\\r`) sends the cursor back but erases nothing."""
    if "\r" not in text:
        return text
    return text.rstrip("\r").rsplit("\r", 1)[-1]


def shown(text: str) -> str:
    """A log line as the page shows and searches it, as plain text: what a terminal would display (jobs.ansi: the
    part after the last carriage return that has any text, without escape codes). A mail quotes it so."""
    return ansi.plain(text)
