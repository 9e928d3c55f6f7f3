"""What a browser tab of the served console shows, read from xterm.js's own buffer (the screen is drawn on a
canvas, not in the DOM). Shared by the browser tests (tests/console/web/).

`CATCH_TERMINAL` goes in as an init script (`Page.add_init_script`) before the page loads; `SCREEN`, evaluated
in the page, is then the terminal's size and lines (null until textual.js has made its terminal).
"""

from __future__ import annotations

import json

# textual.js keeps its xterm.js Terminal in a property named `terminal` of an object of its own: catch it as it
# is set (only the page's one assignment of that name), so the test can read what xterm.js holds on screen.
CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {configurable: true, set(value) {
  window.__terminal = value;
  Object.defineProperty(this, "terminal", {value, writable: true, configurable: true, enumerable: true});
}});
"""
SCREEN = """(() => {
  const terminal = window.__terminal;
  if (!terminal) return null;
  const lines = [];
  for (let y = 0; y < terminal.rows; y++) lines.push(terminal.buffer.active.getLine(y).translateToString(true));
  return {cols: terminal.cols, rows: terminal.rows, lines};
})()"""


def showing(text: str) -> str:
    """A JavaScript expression, truthy once a line of the tab's terminal contains `text` (for `Page.wait_for`)."""
    return f"(() => {{ const screen = {SCREEN}; return !!screen && screen.lines.some(line => line.includes(" \
           f"{json.dumps(text)})); }})()"
