"""Recorded text made safe to show in a report: recordings are hostile input, written by models and customers.

Every text a recording holds (a tool's name, its arguments, a rule's reason quoting a recorded value, a file
name, a conversation label) passes through one of these before it is written into a page:

- `visible`: control and format characters (C0/C1 controls, DEL, bidirectional overrides, zero-width
  characters, line and paragraph separators, lone surrogates) written as `\\x1b`, `\\u202e`, ... so nothing
  recorded can move the cursor, reorder the text a reader sees, or hide a character; long texts are cut;
- `html_text`: `visible`, then HTML-escaped (quotes too, so it is safe in an attribute);
- `md_text`: `visible`, then every character Markdown or inline HTML would give a meaning escaped, so a
  recorded `<script>` or `[link](javascript:...)` is shown as written and never rendered;
- `md_code`: a code span whose fence is longer than any run of backticks inside it.
"""

from __future__ import annotations

import html
import re
import unicodedata

LIMIT = 4000  # characters of one recorded text shown; the whole value is in audit.json
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"})
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~&])")


def _shown(char: str) -> str:
    if unicodedata.category(char) not in _HIDDEN:
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, limit: int = LIMIT) -> str:
    """`text` with every control or invisible character written out (see the module docstring), at most
    `limit` characters (a cut text ends with "…")."""
    cut = len(text) > limit
    body = text[:limit] if cut else text
    if body.isprintable():
        shown = body
    else:
        shown = "".join(_shown(char) for char in body)
    return shown + ("…" if cut else "")


def html_text(text: object, limit: int = LIMIT) -> str:
    return html.escape(visible(str(text), limit), quote=True)


def md_text(text: object, limit: int = LIMIT) -> str:
    return _MD_SPECIAL.sub(r"\\\1", visible(str(text), limit))


def md_code(text: object, limit: int = LIMIT) -> str:
    """A Markdown code span of `text` (made visible): a code span shows its text literally, HTML included."""
    body = visible(str(text), limit)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return f"{fence}{pad}{body}{pad}{fence}"
