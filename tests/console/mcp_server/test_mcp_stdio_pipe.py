"""While `ledgeragent mcp` serves over stdio, the process's own stdout is off the wire (a stray print goes to
stderr and cannot corrupt a message); once it is done, stdin and stdout are the pipe again. In a real child
process, with its stdout and stderr captured apart."""

from __future__ import annotations

import subprocess
import sys

from tests.support.mcp_server import ROOT

SCRIPT = """
from console.mcp.stdio import claimed_pipe
with claimed_pipe() as (reader, writer):
    writer.write(b"on the wire\\n")
    print("stray", flush=True)
    assert reader.read() == b"from the client"
print("after", flush=True)
"""


def test_stdout_is_off_the_wire_while_serving_and_back_after() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, input=b"from the client", capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"on the wire\nafter\n"
    assert done.stderr == b"stray\n"
