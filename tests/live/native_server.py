"""Runs llama.cpp's native server (embedded in the `xllamacpp` wheel) until terminated: the live tests' launcher.

Usage: python native_server.py MODEL PORT N_CTX THREADS [TEMPLATE]. Binds 127.0.0.1 only. TEMPLATE is a Jinja
chat template file (`--chat-template-file`): SmolLM2's own template has no tool support. Runs in the live virtualenv,
never imported by the test suite.
"""

from __future__ import annotations

import signal
import sys
import threading

import xllamacpp


def main() -> None:
    model, port, n_ctx, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.use_jinja = True  # as `llama-server --jinja`: the model's template, and tool calls parsed from it
    if len(sys.argv) > 5:
        with open(sys.argv[5], encoding="utf-8") as template:
            params.chat_template = template.read()
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    server = xllamacpp.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
