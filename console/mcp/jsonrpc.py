"""What JSON-RPC 2.0 and MCP refuse in a message, and how each refusal is answered: one set of rules for stdio
and for HTTP, so a client gets the same answer to the same bad message over either.

The SDK's validation (`mcp_types.jsonrpc_message_adapter`) decides what a well-formed message is; these rules
cover what it lets through or words in the wrong code:
- a batch (a JSON array) is no message: JSON-RPC allows batches, but MCP removed them in its 2025-06-18
  revision (the SDK implements 2025-11-25: every message is one JSON object), so an array is an invalid
  request, answered once with id null;
- a request's `id` is a string or an integer (MCP: never null, never a fraction; JSON-RPC: never an object or
  an array). The SDK takes a message with any other id for a notification (its id field unknown) and never
  answers it: here it is an invalid request, answered with id null (its id cannot be echoed as an id);
- an object that is neither a request, a notification nor a response (`{}`) is an invalid request;
- a message that fails validation is an invalid request (-32600), with its id when it has a valid one: what
  JSON-RPC's own examples answer (the SDK says invalid params over HTTP, -32602, which is for a method's
  arguments). A response from the client (it has a result or an error and no method) is never answered,
  malformed or not: answering an answer could go back and forth for ever.

Standard library only: the stdio handshake uses it before the SDK is imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# A server error of this implementation (JSON-RPC's -32000..-32099; MCP leaves -32000..-32019 to
# implementations, the SDK uses -32000 and -32001 itself): the session's disk could not take what it had to record.
DISK_FULL = -32010

RequestId = int | str


@dataclass(frozen=True)
class Refusal:
    """The JSON-RPC error that answers a bad message: its code, the id to answer with, and why."""

    code: int
    id: RequestId | None
    message: str

    def body(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}

    def line(self) -> bytes:
        return (json.dumps(self.body()) + "\n").encode("utf-8")


def valid_id(value: object) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def is_response(value: object) -> bool:
    """A message from the client answering one of ours: never answered itself."""
    return isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value)


def shape_refusal(value: object) -> Refusal | None:
    """The refusal of a parsed message whose shape no validation looks at (see the module docstring), or None."""
    if isinstance(value, list):
        return Refusal(INVALID_REQUEST, None, "Invalid request: a batch (a JSON array) is not accepted: MCP sends "
                                              "one JSON-RPC message at a time (batches were removed in 2025-06-18)")
    if not isinstance(value, dict):
        return Refusal(INVALID_REQUEST, None, "Invalid request: a JSON-RPC message is a JSON object")
    if "method" in value:
        if "id" in value and not valid_id(value["id"]):
            return Refusal(INVALID_REQUEST, None, "Invalid request: a request's id is a string or an integer "
                                                  "(never null, a fraction, an object or an array)")
        return None
    if is_response(value):
        return None
    request_id = value.get("id")
    return Refusal(INVALID_REQUEST, request_id if valid_id(request_id) else None,
                   "Invalid request: a message has a method (a request or a notification), or a result or an "
                   "error (a response)")


def invalid_refusal(value: object, reason: str) -> Refusal | None:
    """The refusal of a message its validation failed for `reason` (None for a response: never answered)."""
    if is_response(value):
        return None
    request_id = value.get("id") if isinstance(value, dict) else None
    return Refusal(INVALID_REQUEST, request_id if valid_id(request_id) else None,
                   f"Invalid request: {reason[:300]}")
