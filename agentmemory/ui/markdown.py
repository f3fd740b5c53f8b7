"""An entry's content as Markdown HTML that cannot carry markup of its own.

CommonMark through markdown-it-py with raw HTML off (every ``<`` of the content is escaped, so a
``<script>`` or ``<img onerror=...>`` is text) and its link check on (``javascript:``,
``vbscript:``, ``file:`` and ``data:`` links are left as text); links open with
``rel="noopener noreferrer nofollow"``. The page's Content-Security-Policy backs this up: no
script runs and no image loads from elsewhere (docs/inspector.md#memory-is-untrusted-text).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["to_html"]


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False})

    def link_open(tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        return str(md.renderer.renderToken(tokens, idx, options, env))  # type: ignore[attr-defined]

    md.add_render_rule("link_open", link_open)
    return md


def to_html(content: str) -> str:
    """``content`` rendered as CommonMark HTML with no raw HTML and no script links."""
    return str(_parser().render(content))
