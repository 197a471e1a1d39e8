"""Bounded-memory building blocks of the output comparators.

A program may print up to the output cap (64 MiB) of anything, and an expected output may be
hundreds of MB: neither is ever split into one full token or line list. Text is read in chunks
of `CHUNK_CHARS` characters (a capture file is decoded incrementally), turned into batches of
tokens or into pieces of a line-normalised stream, and two such streams are compared in
lockstep, stopping at the first difference. Memory per comparison is a few chunks plus one
token or whitespace run of at most `TOKEN_CAP` characters, whatever the input.

A token (or an inner whitespace gap of the line view) longer than `TOKEN_CAP` characters is
kept as its length and SHA-256 only (`Digest`): it equals exactly the same text and nothing
else, so the number and keyword rules of the comparators do not apply to such giants.
"""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

#: characters decoded and tokenised at a time
CHUNK_CHARS = 64 * 1024
#: bytes read from a capture file at a time
CHUNK_BYTES = 64 * 1024
#: longest token (or inner whitespace gap) kept as text; longer ones become a Digest
TOKEN_CAP = 1024 * 1024


@dataclass(frozen=True)
class Digest:
    """A token or whitespace gap too long to keep: equal only to the very same text."""

    length: int
    sha256: str


Token = str | Digest
#: a factory of fresh text chunks (each call starts again from the beginning)
ChunkSource = Callable[[], Iterator[str]]


def str_chunks(text: str) -> ChunkSource:
    """Chunks of an in-memory string (slices: no copy of the whole text)."""

    def chunks() -> Iterator[str]:
        for start in range(0, len(text), CHUNK_CHARS):
            yield text[start : start + CHUNK_CHARS]

    return chunks


def file_chunks(fh: BinaryIO, errors: str) -> ChunkSource:
    """Decoded chunks of a binary file, from its start; invalid UTF-8 handled by `errors`
    ("replace" or "ignore") exactly as a whole-file decode would."""

    def chunks() -> Iterator[str]:
        fh.seek(0)
        decoder = codecs.getincrementaldecoder("utf-8")(errors=errors)
        while True:
            data = fh.read(CHUNK_BYTES)
            text = decoder.decode(data, final=not data)
            if text:
                yield text
            if not data:
                return

    return chunks


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class _Accumulator:
    """Text built piece by piece; past TOKEN_CAP characters only its length and hash remain."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.hasher: hashlib._Hash | None = None

    def add(self, text: str) -> None:
        if not text:
            return
        self.length += len(text)
        if self.hasher is not None:
            self.hasher.update(_encode(text))
            return
        self.parts.append(text)
        if self.length > TOKEN_CAP:
            self.hasher = hashlib.sha256()
            for part in self.parts:
                self.hasher.update(_encode(part))
            self.parts = []

    def take(self) -> Token:
        """The accumulated text (or its Digest), and reset."""
        out: Token
        if self.hasher is not None:
            out = Digest(self.length, self.hasher.hexdigest())
        else:
            out = "".join(self.parts)
        self.parts, self.length, self.hasher = [], 0, None
        return out


def token_batches(
    chunks: Iterable[str], split: Callable[[str], list[str]], is_space: Callable[[str], bool]
) -> Iterator[list[Token]]:
    """Batches of whitespace-separated tokens of the concatenated chunks.

    `split(chunk)` returns the chunk's tokens and `is_space(char)` says whether a character
    separates tokens; both must agree. A token cut by a chunk boundary is joined again.
    """
    pending = _Accumulator()
    active = False
    for chunk in chunks:
        if not chunk:
            continue
        pieces = split(chunk)
        lead_space, trail_space = is_space(chunk[0]), is_space(chunk[-1])
        batch: list[Token] = []
        start = 0
        if active and not lead_space:  # the chunk continues the pending token
            pending.add(pieces[0])
            start = 1
            if len(pieces) == 1 and not trail_space:
                continue
        if active and (lead_space or start == 1):
            batch.append(pending.take())
            active = False
        end = len(pieces) if trail_space else len(pieces) - 1
        if end > start:
            batch.extend(pieces[start:end])
        if not trail_space and len(pieces) > start:
            pending.add(pieces[-1])
            active = True
        if batch:
            yield batch
    if active:
        yield [pending.take()]


def batches_equal(
    actual: Iterable[list[Token]],
    expected: Iterable[list[Token]],
    equal: Callable[[str, str], bool],
) -> bool:
    """Same number of tokens and `equal(actual_token, expected_token)` pairwise; reads only as
    far as the first difference. Digests are equal only to an identical Digest."""
    a_it, e_it = iter(actual), iter(expected)
    a_buf: list[Token] = []
    e_buf: list[Token] = []
    ai = ei = 0
    while True:
        while ai >= len(a_buf):
            nxt = next(a_it, None)
            if nxt is None:
                break
            a_buf, ai = nxt, 0
        while ei >= len(e_buf):
            nxt = next(e_it, None)
            if nxt is None:
                break
            e_buf, ei = nxt, 0
        a_left, e_left = len(a_buf) - ai, len(e_buf) - ei
        if a_left <= 0 or e_left <= 0:
            return a_left <= 0 and e_left <= 0
        n = min(a_left, e_left)
        a_part, e_part = a_buf[ai : ai + n], e_buf[ei : ei + n]
        if a_part != e_part:  # the common case (identical tokens) is decided at C speed
            for x, y in zip(a_part, e_part, strict=True):
                if isinstance(x, Digest) or isinstance(y, Digest):
                    if x != y:
                        return False
                elif not equal(x, y):
                    return False
        ai += n
        ei += n


class _LineNormaliser:
    """Pieces of ``"\\n".join(line.strip() for line in text.strip().split("\\n"))``.

    Built incrementally: a whitespace gap after a line's content is held until the line goes on
    (an inner gap, kept) or ends (trailing, dropped); blank lines are counted, not stored.
    """

    def __init__(self) -> None:
        self.out: list[Token | _Breaks] = []
        self.out_len = 0
        self.started = False  # a line with content was seen
        self.in_line = False  # the current line has content
        self.pending_nl = 0  # line breaks since the last line with content
        self.gap = _Accumulator()

    def _emit(self, text: str) -> None:
        if text:
            self.out.append(text)
            self.out_len += len(text)

    def _emit_breaks(self, count: int) -> None:
        if count > 0:  # expanded lazily by `_merged`: millions of blank lines cost nothing
            self.out.append(_Breaks(count))
            self.out_len += min(count, CHUNK_CHARS)

    def _flush_gap(self) -> None:
        gap = self.gap.take()
        if isinstance(gap, Digest):
            self.out.append(gap)
        else:
            self._emit(gap)

    def _open_line(self, separating_breaks: int) -> None:
        if self.started:
            self._emit_breaks(separating_breaks)
        self.started = True
        self.in_line = True
        self.pending_nl = 0

    def partial(self, text: str) -> None:
        """Text of the current line (no line break in it)."""
        if not text:
            return
        if not self.in_line:
            text = text.lstrip()
            if not text:
                return
            self._open_line(self.pending_nl)
            body = text.rstrip()
            self._emit(body)
            self.gap.add(text[len(body) :])
            return
        body = text.rstrip()
        if not body:
            self.gap.add(text)
            return
        self._flush_gap()  # the gap is inside the line: it counts
        self._emit(body)
        self.gap.add(text[len(body) :])

    def line_break(self) -> None:
        if self.in_line:
            self.gap.take()  # trailing whitespace of a line is dropped
            self.in_line = False
            self.pending_nl = 1
        else:
            self.pending_nl += 1

    def whole_lines(self, block: str) -> None:
        """Complete lines (`block` split at line breaks, each line followed by a break)."""
        assert not self.in_line
        if block.isspace() or not block:  # blank lines only: just count them
            self.pending_nl += block.count("\n") + 1
            return
        joined = "\n".join([line.strip() for line in block.split("\n")])
        core = joined.strip("\n")
        blanks_before = len(joined) - len(joined.lstrip("\n"))
        blanks_after = len(joined) - len(joined.rstrip("\n"))
        self._open_line(self.pending_nl + blanks_before)
        self._emit(core)
        self.in_line = False
        self.pending_nl = 1 + blanks_after

    def drain(self) -> list[Token | _Breaks]:
        out = self.out
        self.out, self.out_len = [], 0
        return out


def normalised_line_pieces(chunks: Iterable[str]) -> Iterator[Token]:
    """The line-normalised stream (see `_LineNormaliser`) as text pieces and Digests."""
    norm = _LineNormaliser()
    for chunk in chunks:
        first = chunk.find("\n")
        if first < 0:
            norm.partial(chunk)
        else:
            last = chunk.rfind("\n")
            norm.partial(chunk[:first])
            norm.line_break()
            if last > first:
                norm.whole_lines(chunk[first + 1 : last])
            norm.partial(chunk[last + 1 :])
        if norm.out_len >= CHUNK_CHARS or len(norm.out) > 1024:
            yield from _merged(norm.drain())
    yield from _merged(norm.drain())  # a pending gap or pending breaks at the end are dropped


@dataclass(frozen=True)
class _Breaks:
    """`count` line breaks in a row, not yet written out."""

    count: int


def _merged(pieces: list[Token | _Breaks]) -> Iterator[Token]:
    """Adjacent text pieces joined (fewer, longer pieces to compare); runs of line breaks
    written out one chunk at a time."""
    texts: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            texts.append(piece)
            continue
        if texts:
            yield "".join(texts)
            texts = []
        if isinstance(piece, Digest):
            yield piece
            continue
        left = piece.count
        while left > 0:
            n = min(left, CHUNK_CHARS)
            yield "\n" * n
            left -= n
    if texts:
        yield "".join(texts)


def pieces_equal(actual: Iterable[Token], expected: Iterable[Token]) -> bool:
    """Two streams of text pieces and Digests represent the same sequence; stops at the first
    difference. Text is compared across piece boundaries; a Digest only matches a Digest."""
    a_it, e_it = iter(actual), iter(expected)
    a, e = next(a_it, None), next(e_it, None)
    ai = ei = 0
    while True:
        if a is None or e is None:
            return a is None and e is None
        if isinstance(a, str) and isinstance(e, str):
            n = min(len(a) - ai, len(e) - ei)
            if a[ai : ai + n] != e[ei : ei + n]:
                return False
            ai += n
            ei += n
            if ai == len(a):
                a, ai = next(a_it, None), 0
            if ei == len(e):
                e, ei = next(e_it, None), 0
        else:
            if a != e:
                return False
            a, e = next(a_it, None), next(e_it, None)
            ai = ei = 0
