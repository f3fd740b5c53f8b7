"""Windows: a text longer than an embedder's input split into overlapping spans that each fit.

A model reads a bounded number of word pieces (all-MiniLM-L6-v2: 256, two of them its special
tokens) and silently drops the rest, so the end of a long text cannot be found by meaning. An
embedder that has a window says how to split a text into overlapping *windows* that each fit:
:class:`Windowed` (``windows(text)`` and ``window_layout``). The window is measured with the
embedder's own tokenizer (character offsets from a fast tokenizer), never guessed in bytes
(docs/recall.md#windows).

The rule (:func:`token_windows`), on the text's tokens (word pieces without special tokens):

* a text of at most ``window`` tokens is one window, the whole text;
* otherwise windows of ``window`` tokens start at token 0, ``stride``, ``2 * stride``, ...; each
  start and end moves back to the first piece of a word (a word's pieces stay together) unless
  that would empty the window (a single word longer than the window is cut); the last window
  ends at the text's last token and holds as many tokens as the window allows (moved forward to
  a word's first piece), so no window is a short tail.

The first window starts at character 0 (a description put before the content stays with it) and
the last ends at the text's end. :func:`text_windows` and :func:`window_layout` also serve an
embedder without windows (a user's own): one window, the whole text.

This module imports nothing heavy; :class:`TokenWindows` imports ``tokenizers`` when first used.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "WHOLE_TEXT",
    "WINDOW_RULE",
    "TokenWindows",
    "Windowed",
    "default_stride",
    "text_windows",
    "token_windows",
    "window_layout",
    "word_windows",
]

WINDOW_RULE = "win-1"
"""Names the splitting rule of :func:`token_windows`; part of every layout. Change it whenever
the windows of some text change, so stores re-embed their long entries
(docs/storage.md#windows-and-the-index-state)."""

WHOLE_TEXT = "whole"
"""The layout of an embedder without windows: every text is one window."""


def default_stride(window: int) -> int:
    """The default step between window starts: half the window (at least 1), so consecutive
    windows overlap by half and every span of up to ``window / 2`` tokens lies whole inside one
    window. Half-window overlap is the usual sliding-window setting for passage scoring
    (Dai and Callan, "Deeper Text Understanding for IR with Contextual Neural Language
    Modeling", SIGIR 2019, 150-word passages every 75 words); docs/recall.md#windows."""
    return max(1, window // 2)


@runtime_checkable
class Windowed(Protocol):
    """The part of an embedder that splits texts into windows (optional: an embedder without it
    embeds each text as one window, truncated by its model).

    Attributes:
        window_layout: ``"<unit>:<window>/<stride>;<rule>"`` (``"tokens:254/127;win-1"``), or
            :data:`WHOLE_TEXT`. Two embedders with equal layouts split every text alike; a
            store records it and re-embeds its multi-window entries when it changes.
    """

    @property
    def window_layout(self) -> str:
        """How texts are split (see the class docstring)."""
        ...

    def windows(self, text: str) -> list[tuple[int, int]]:
        """The windows of ``text`` as ``(start, end)`` character offsets (``text[start:end]``),
        in order: the first starts at 0, the last ends at ``len(text)``, consecutive windows
        overlap, and each window's text fits the model's input. A text that fits is
        ``[(0, len(text))]``."""
        ...


def window_layout(embedder: object) -> str:
    """``embedder.window_layout`` when it has windows (:class:`Windowed`), else
    :data:`WHOLE_TEXT`."""
    if isinstance(embedder, Windowed):
        return str(embedder.window_layout)
    return WHOLE_TEXT


def text_windows(embedder: object, text: str) -> list[str]:
    """The texts of ``text``'s windows for ``embedder`` (its :meth:`Windowed.windows`), or
    ``[text]`` for an embedder without windows. Never empty.

    Raises:
        ValueError: the embedder returned spans that do not cover the text in order (the
            first starts at 0, the last ends at the text's end, each starts after the one
            before and no later than its end; its ``windows`` is broken); the message names
            the embedder.
    """
    if not isinstance(embedder, Windowed):
        return [text]
    spans = embedder.windows(text)
    in_order = all(0 <= a <= b <= len(text) for a, b in spans) and all(
        spans[i][0] < spans[i + 1][0] <= spans[i][1] for i in range(len(spans) - 1)
    )
    if not spans or spans[0][0] != 0 or spans[-1][1] != len(text) or not in_order:
        raise ValueError(
            f"embedder {getattr(embedder, 'name', embedder)!r} returned windows {spans[:3]!r}"
            f"{'...' if len(spans) > 3 else ''} for a text of {len(text)} characters; they must "
            "start at 0, end at the text's end and be in order"
        )
    return [text[start:end] for start, end in spans]


def _back_to_word(i: int, floor: int, starts_word: Sequence[bool]) -> int:
    """The nearest token index ``<= i`` and ``> floor`` that begins a word, else ``i``."""
    j = i
    while j > floor and not starts_word[j]:
        j -= 1
    return j if j > floor else i


def token_windows(
    starts_word: Sequence[bool], *, window: int, stride: int
) -> list[tuple[int, int]]:
    """Token spans ``(start, end)`` (end exclusive) of the windows of a text of
    ``len(starts_word)`` tokens, by the rule of the module docstring; ``starts_word[i]`` says
    token ``i`` is the first piece of a word.

    Raises:
        ValueError: ``window`` or ``stride`` under 1, or ``stride`` over ``window`` (a gap
            between windows would leave text unread).
    """
    if window < 1 or stride < 1 or stride > window:
        raise ValueError(
            f"window {window} and stride {stride} must be at least 1, with stride <= window"
        )
    n = len(starts_word)
    if n <= window:
        return [(0, n)]
    spans: list[tuple[int, int]] = []
    start = 0
    while start + window < n:
        end = _back_to_word(start + window, start, starts_word)
        spans.append((start, end))
        step = _back_to_word(start + stride, start, starts_word)
        start = step if step > start else start + stride
    last = n - window
    while last < n - 1 and not starts_word[last]:
        last += 1
    spans.append((last, n))
    return spans


def _char_spans(
    offsets: Sequence[tuple[int, int]], tokens: list[tuple[int, int]], length: int
) -> list[tuple[int, int]]:
    """Character spans of token spans: window 0 from 0, the last to ``length``."""
    out = []
    for i, (start, end) in enumerate(tokens):
        first = 0 if i == 0 else offsets[start][0]
        last = length if i == len(tokens) - 1 else offsets[end - 1][1]
        out.append((first, last))
    return out


_WORD = re.compile(r"\w+", re.UNICODE)


def word_windows(text: str, *, window: int, stride: int) -> list[tuple[int, int]]:
    """Windows of ``window`` words every ``stride`` words (words: runs of ``\\w``, as the
    hashing embedder counts them), as character spans; the rule of :func:`token_windows` with
    every word one token."""
    found = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if len(found) <= window:
        return [(0, len(text))]
    tokens = token_windows([True] * len(found), window=window, stride=stride)
    return _char_spans(found, tokens, len(text))


class TokenWindows:
    """Windows measured with a Hugging Face fast tokenizer (``tokenizers.Tokenizer``).

    Args:
        source: the tokenizer: a ``tokenizer.json`` path, or a ``tokenizers.Tokenizer`` (a copy
            is kept, so its truncation and padding settings are never touched).
        max_seq_length: the model's input in word pieces, special tokens included (256 for
            all-MiniLM-L6-v2); the window is that minus the special tokens the tokenizer adds
            to one sequence (2, ``[CLS]`` and ``[SEP]``: 254).
        stride: tokens between window starts; ``None`` means :func:`default_stride`.

    The tokenizer is loaded on first use. Safe for several threads (encoding takes a lock).

    Raises:
        ValueError: ``max_seq_length`` leaves no room beside the special tokens, or a bad
            ``stride`` (on first use, when the window is known).
    """

    def __init__(self, source: str | Path | Any, max_seq_length: int, stride: int | None = None):
        self._source = source
        self._max_seq_length = max_seq_length
        self._stride = stride
        self._tokenizer: Any = None
        self._window = 0
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                if isinstance(self._source, (str, Path)):
                    tok = Tokenizer.from_file(str(self._source))
                else:
                    tok = Tokenizer.from_str(self._source.to_str())
                tok.no_truncation()
                tok.no_padding()
                window = self._max_seq_length - int(tok.num_special_tokens_to_add(False))
                if window < 1:
                    raise ValueError(
                        f"max_seq_length {self._max_seq_length} leaves no word piece beside the "
                        "tokenizer's special tokens"
                    )
                stride = default_stride(window) if self._stride is None else self._stride
                token_windows([], window=window, stride=stride)  # checks the pair
                self._window, self._stride = window, stride
                self._tokenizer = tok
        return self._tokenizer

    @property
    def window(self) -> int:
        """Word pieces per window (the model's input minus its special tokens)."""
        self._load()
        return self._window

    @property
    def stride(self) -> int:
        """Word pieces between consecutive window starts."""
        self._load()
        assert self._stride is not None
        return self._stride

    @property
    def layout(self) -> str:
        """``"tokens:<window>/<stride>;<WINDOW_RULE>"``, e.g. ``"tokens:254/127;win-1"``."""
        return f"tokens:{self.window}/{self.stride};{WINDOW_RULE}"

    def windows(self, text: str) -> list[tuple[int, int]]:
        """The windows of ``text`` as character spans (see :meth:`Windowed.windows`)."""
        tok = self._load()
        with self._lock:
            enc = tok.encode(text, add_special_tokens=False)
        if len(enc.ids) <= self._window:
            return [(0, len(text))]
        words = enc.word_ids
        starts_word = [
            i == 0 or words[i] is None or words[i] != words[i - 1] for i in range(len(words))
        ]
        assert self._stride is not None
        tokens = token_windows(starts_word, window=self._window, stride=self._stride)
        return _char_spans(enc.offsets, tokens, len(text))
