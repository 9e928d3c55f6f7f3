"""What a failing OpenAI-compatible server said, in one line for the operator and whole for the record.

Servers nobody here wrote answer failures in their own ways: llama-cpp-python wraps any exception as HTTP 500
with `str(exception)` as the message (a pydantic `ValidationError` is ~35 lines, with a help URL per field),
some put a Python traceback with server paths in the body, a proxy in front answers an HTML page. The
transcript has room for one line, so `summarize` keeps the status-worthy words (the exception's last line,
pydantic's field and message pairs, an HTML page's title) and drops the noise (help URLs, `File "..."`
frames, `[type=..., input_value=...]` suffixes). The full text stays available through `detail_text`.

`request_is_invalid` decides whether a failure will recur identically. A 5xx normally means "try again",
but llama-cpp-python reports a request it cannot accept (a `null` content, a context overflow) as 500 too;
sending the same doomed request again only queues another full prompt on a server that does not cancel
abandoned work. The markers below are the wordings of such answers seen from llama.cpp's servers, vLLM
and OpenAI; everything else stays retryable.
"""

from __future__ import annotations

import html
import re

__all__ = ["MAX_DETAIL", "MAX_LINE", "describe_body", "detail_text", "request_is_invalid", "summarize"]

MAX_LINE = 240  # characters of a one-line summary
MAX_DETAIL = 8_000  # characters of a server's text kept in an error's detail (and so in the trace)

_PYDANTIC_HEAD = re.compile(r"^(\d+) validation errors? for (\S+)$")
_PYDANTIC_SUFFIX = re.compile(r"\s*\[type=[^\]]*\]\s*$")
_NOISE_PREFIXES = ("For further information visit", "Traceback (most recent call last)", "File \"",
                   "During handling of the above exception", "The above exception was the direct cause")
_SPACES = re.compile(r"\s+")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")
_SCRIPTS = re.compile(r"<(script|style)[^>]*>.*?</\1>", re.IGNORECASE | re.DOTALL)

# Lower-case fragments of error texts that mean "this exact request can never succeed".
_INVALID_MARKERS = (
    "validation error",  # pydantic (llama-cpp-python: 500 for a request its models reject)
    "input should be",  # pydantic's per-field message
    "failed to parse",  # llama-server: "Failed to parse tool call arguments as JSON"
    "context_length_exceeded", "maximum context length", "exceed context window", "exceeds the available context",
    "context size", "not found in tools",  # llama-cpp-python: a named tool_choice that is not in the tool list
    "invalid_request_error",
)


def _shorten(text: str, limit: int) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _html_text(text: str) -> str:
    """An HTML page as a few words: its title, else its visible text."""
    title = _TITLE.search(text)
    if title is not None and title.group(1).strip():
        return f"an HTML page: {html.unescape(title.group(1)).strip()}"
    visible = html.unescape(_TAGS.sub(" ", _SCRIPTS.sub(" ", text)))
    return f"an HTML page: {visible}" if visible.strip() else "an HTML page"


def _looks_like_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body")) or "<html" in head


def _pydantic(lines: list[str]) -> str | None:
    """`3 validation errors for X` + (location, message) pairs -> `3 validation errors for X: loc: msg; …`."""
    head = _PYDANTIC_HEAD.match(lines[0]) if lines else None
    if head is None:
        return None
    pairs: list[str] = []
    rest = lines[1:]
    for location, message in zip(rest[::2], rest[1::2], strict=False):
        pairs.append(f"{location}: {message}")
    return f"{lines[0]}: " + "; ".join(pairs) if pairs else lines[0]


def summarize(text: str, limit: int = MAX_LINE) -> str:
    """The server's error text as one line of at most `limit` characters (see the module docstring)."""
    if _looks_like_html(text):
        return _shorten(_html_text(text), limit)
    raw_lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if any(line.startswith("Traceback (most recent call last)") for line in raw_lines):
        # A traceback: the exception line (the last unindented one) is what happened; frames are noise.
        unindented = [line for line in raw_lines if not line[:1].isspace()
                      and not line.startswith(_NOISE_PREFIXES)]
        if unindented:
            raw_lines = unindented[-1:]
    lines = [_PYDANTIC_SUFFIX.sub("", line.strip()) for line in raw_lines
             if not line.strip().startswith(_NOISE_PREFIXES)]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    condensed = _pydantic(lines)
    return _shorten(condensed if condensed is not None else "; ".join(lines), limit)


def detail_text(text: str) -> str:
    """The server's text as kept for the record: whole, up to MAX_DETAIL characters."""
    text = text.strip()
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL] + f"… [{len(text) - MAX_DETAIL} more characters]"


def request_is_invalid(*texts: str | None) -> bool:
    """True when any of the texts (message, error type, code) says the request itself cannot be served."""
    lowered = " ".join(text.lower() for text in texts if text)
    return any(marker in lowered for marker in _INVALID_MARKERS)


def describe_body(content: bytes, content_type: str) -> str:
    """What an unusable 200 body was, in a few words: empty, a stream, HTML, or the start of its text."""
    if not content.strip():
        return "the body is empty"
    text = content.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if "text/event-stream" in content_type.lower() or stripped.startswith(("data:", "event:")):
        return "the server sent a stream (text/event-stream) although none was asked for"
    if "html" in content_type.lower() or _looks_like_html(text):
        return f"the body is {_html_text(text)}, not JSON"
    return f"the body is not JSON: {_shorten(stripped, 80)!r}"
