"""The stdio server's answer to `initialize`, written before anything heavy is imported.

A desktop client launches `ledgeragent mcp` for every chat and waits for the answer to its `initialize`
before it shows the server as ready; the MCP SDK alone takes some 400 ms to import (its pydantic models),
the domain and the session runtime as much again. The answer depends on none of them: the server's name,
title, version and instructions, its capabilities (fixed: tools, resources, prompts, none of them changing),
and the protocol version (the client's, when the SDK speaks it, else the SDK's latest). So `answer_early`
reads the first line of stdin, and when it is an `initialize` request this module can answer exactly as the
SDK would, writes that answer at once. Everything read is then handed to the stdio transport
(`console.mcp.stdio.Wire`): the SDK's server still receives the `initialize` (so its connection is set up as
for any client) and its own answer, the same, is not written again.

The `initialize` handed on carries the client's name, version and protocol version, and no capabilities: this
server never asks the client for anything (no sampling, roots or elicitation), so they change nothing, and
without them the SDK cannot refuse what was already accepted here. Anything else as the first line (a
malformed `initialize`, the 2026 era's `server/discover`, a domain this module has no title for) is left to
the SDK, whose answer then comes once it is imported.

`tests/console/mcp_server/test_mcp_startup.py` checks the answer against the SDK's own for every domain and
protocol version, and this module's tables against the SDK's and the domains'. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from console.mcp.jsonrpc import RequestId, valid_id

# mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS of the SDK this server is built on (the test compares them)
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE_VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]
# each domain's `Domain.title` (the test compares them): the server's title names it
TITLES = {
    "airline": "Airline (tau2-bench compatible)",
    "retail": "Retail (tau2-bench compatible)",
    "telecom": "Telecom (tau2-bench, dual control)",
    "telehealth": "Telehealth (tau-Trait, tau2 conventions)",
}
DIST_PREFIX = "ledgeragent_console-"  # the package's metadata folder: ledgeragent_console-<version>.dist-info
LEDGER_URI = "ledgeragent://ledger"
POLICY_URI = "ledgeragent://policy"
CAPABILITIES = {"prompts": {"listChanged": False}, "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}
SERVER_INSTRUCTIONS = """Tools of the {title} domain, behind a policy gate. Reads return observed state and are \
kept in a ledger (resource {ledger}). Every write is checked against the policy (resource {policy}) before it \
runs: when a result is an error saying NOT EXECUTED, the write did not happen; fix what it names (often: read \
the record it cites first) or tell the customer why it cannot be done. A human supervisor may hold a write \
for approval."""


def server_name(domain: str) -> str:
    return f"ledgeragent-{domain}"


def server_title(title: str) -> str:
    return f"LedgerAgent: {title}"


def instructions(title: str) -> str:
    return SERVER_INSTRUCTIONS.format(title=title, ledger=LEDGER_URI, policy=POLICY_URI)


def version() -> str:
    """The installed package's version, read from its metadata file (`importlib.metadata` finds the same file,
    but its import costs more than the rest of the handshake)."""
    for folder in sys.path:
        try:
            names = [name for name in os.listdir(folder or ".")
                     if name.startswith(DIST_PREFIX) and name.endswith(".dist-info")]
        except OSError:
            continue
        for name in names:
            with contextlib.suppress(OSError), open(os.path.join(folder or ".", name, "METADATA"),
                                                    encoding="utf-8") as metadata:
                for line in metadata:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():
                        break
    return _metadata_version()


def _metadata_version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("ledgeragent-console")
    except PackageNotFoundError:
        return "unknown"


def negotiated(requested: str) -> str:
    """The SDK's rule: the client's version when it is one the handshake speaks, else the latest."""
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


@dataclass(frozen=True)
class Early:
    """What `answer_early` read from stdin (to be read again by the transport, first), and the id of the
    `initialize` it answered (None when it answered nothing)."""

    pending: bytes
    answered: RequestId | None


def initialize_result(domain: str, protocol_version: str) -> dict[str, Any]:
    """The result of `initialize`, as the SDK words it for this server."""
    title = TITLES[domain]
    return {"capabilities": CAPABILITIES, "instructions": instructions(title),
            "protocolVersion": negotiated(protocol_version),
            "serverInfo": {"name": server_name(domain), "title": server_title(title), "version": version()}}


def fitting_initialize(value: Any) -> tuple[RequestId, str, str, str] | None:
    """(id, protocol version, client name, client version) of an `initialize` this module answers, else None."""
    if not (isinstance(value, dict) and value.get("jsonrpc") == "2.0" and value.get("method") == "initialize"
            and valid_id(value.get("id"))):
        return None
    params = value.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    requested, info = params.get("protocolVersion"), params.get("clientInfo")
    if not isinstance(requested, str) or not isinstance(info, dict):
        return None
    name, client_version = info.get("name"), info.get("version")
    if not isinstance(name, str) or not isinstance(client_version, str):
        return None
    return value["id"], requested, name, client_version


def answer_early(domain: str, *, max_line: int, fd_in: int = 0, fd_out: int = 1) -> Early:
    """Read stdin up to its first line; answer it when it is an `initialize` this module can answer (module
    docstring). Blocks until that line (or the end of input) has arrived: a server has nothing else to do."""
    data = b""
    while b"\n" not in data and len(data) <= max_line:
        try:
            chunk = os.read(fd_in, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    line, newline, rest = data.partition(b"\n")
    if not newline or domain not in TITLES:
        return Early(data, None)
    try:
        fitting = fitting_initialize(json.loads(line))
    except (ValueError, RecursionError):
        fitting = None
    if fitting is None:
        return Early(data, None)
    request_id, requested, name, client_version = fitting
    answer = {"jsonrpc": "2.0", "id": request_id, "result": initialize_result(domain, requested)}
    try:
        _write_all(fd_out, (json.dumps(answer, separators=(",", ":")) + "\n").encode("utf-8"))
    except OSError:  # the client is gone already: the transport finds that out the usual way
        return Early(data, None)
    handed_on = {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
                 "params": {"protocolVersion": requested, "capabilities": {},
                            "clientInfo": {"name": name, "version": client_version}}}
    return Early(json.dumps(handed_on).encode("utf-8") + b"\n" + rest, request_id)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
