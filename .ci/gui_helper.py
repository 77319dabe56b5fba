#!/usr/bin/env python3
"""Helpers of .ci/gui.sh (the native window under Xvfb).

  gui_helper.py field PATH        print a field of the JSON on stdin ("task.id")
  gui_helper.py mcp               print the tool result of the MCP answer on stdin
  gui_helper.py check REPORT KIND ARGS...
                                  whether the window's last report (the page's
                                  JSON, frontend/src/lib/selftest.ts) shows it;
                                  exits 1 and says what it shows if not
  gui_helper.py shown REPORT SHOT GEOMETRY NAME...
                                  whether the screenshot SHOT (PNG of the root
                                  window) shows something at each canvas of the
                                  named chart figures, not one flat colour: the
                                  page counts what it drew, the screen tells
                                  whether it was shown. GEOMETRY is the app
                                  window's (xwininfo: WxH+X+Y); its webview
                                  fills it below the menu bar.

Checks:
  text TITLE                      the page's text holds TITLE
  charts ROUTE MIN NAME...        at ROUTE, each named chart figure has a canvas
                                  and at least MIN pixels in the series' colours
  tree ROUTE AGENTS ITEM...       at ROUTE, the conversation tree's items are
                                  ITEM... ("level:title", in order) and the
                                  hand-off graph draws each of AGENTS (a,b,…)
"""
import json
import math
import re
import subprocess
import sys

# The least standard deviation (0 to 1) of a canvas's area on the screen
# with a chart on it: axes, labels and series give 0.1 and more; an area
# left blank, 0.004.
MIN_SPREAD = 0.03


def field(doc, path):
    for key in path.split("."):
        doc = doc[key]
    return doc


def mcp_result(text):
    # A JSON answer, or an SSE stream whose data line holds it.
    data = next((l[5:].strip() for l in text.splitlines() if l.startswith("data:")), text)
    msg = json.loads(data)
    if msg.get("error"):
        sys.exit(f"JSON-RPC error: {msg['error']}")
    result = msg.get("result") or {}
    out = (result.get("content") or [{}])[0].get("text", "")
    if result.get("isError"):
        sys.exit(f"tool error: {out}")
    return out


def check(report, kind, args):
    """Returns why the report does not show what kind and args ask, or ""."""
    if kind == "text":
        return "" if args[0] in report["text"] else f"the page's text does not hold {args[0]!r}"
    route = args[0]
    if report["route"] != route:
        return f"the window shows {report['route']!r}, not {route!r}"
    if kind == "charts":
        least, names = int(args[1]), args[2:]
        charts = {c["test"]: c for c in report["charts"]}
        for name in names:
            c = charts.get(name)
            if c is None:
                return f"no chart figure {name} (figures: {sorted(charts)})"
            if c["canvases"] < 1:
                return f"{name} has no canvas (page text: {report['text'][:600]!r})"
            if c["ink"] < least:
                return f"{name} has {c['ink']} pixels in the series' colours on its {c['canvases']} canvas(es), want at least {least}: blank"
        return ""
    if kind == "tree":
        agents, items = [a for a in args[1].split(",") if a], args[2:]
        if report["tree"] != items:
            return f"the conversation tree's items are {report['tree']}, want {items}"
        missing = [a for a in agents if a not in report["graph"]]
        if missing:
            return f"the hand-off graph draws {report['graph']}, not {missing}"
        return ""
    sys.exit(f"unknown check {kind}")


def shown(report, shot, geometry, names):
    """Returns why the screenshot does not show the named charts, or ""."""
    m = re.fullmatch(r"(\d+)x(\d+)\+(\d+)\+(\d+)", geometry.strip())
    if not m:
        return f"no window geometry ({geometry!r})"
    w, h, x, y = map(int, m.groups())
    vw, vh, dpr = report["viewport"]
    left, top = x + w - round(vw * dpr), y + h - round(vh * dpr)
    charts = {c["test"]: c for c in report["charts"]}
    for name in names:
        seen = 0
        for cx, cy, cw, ch in charts.get(name, {}).get("rects", []):
            # The part of the canvas inside the view; a sliver is not judged.
            x0, y0, x1, y1 = max(cx, 0), max(cy, 0), min(cx + cw, vw), min(cy + ch, vh)
            if x1 - x0 < 40 or y1 - y0 < 40:
                continue
            seen += 1
            crop = f"{round((x1 - x0) * dpr)}x{round((y1 - y0) * dpr)}+{left + round(x0 * dpr)}+{top + round(y0 * dpr)}"
            out = subprocess.run(["convert", shot, "-crop", crop, "+repage", "-format", "%[fx:standard_deviation]", "info:"],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                return f"convert: {out.stderr.strip()}"
            spread = float(out.stdout)
            if math.isnan(spread):  # ImageMagick's answer for a single colour
                spread = 0.0
            if spread < MIN_SPREAD:
                return f"{name}'s canvas at {crop} on the screen is one flat colour (spread {spread:.4f}): drawn but not shown"
        if not seen:
            return f"{name} has no canvas in the window's view"
    return ""


def main():
    cmd = sys.argv[1]
    if cmd == "field":
        print(field(json.load(sys.stdin), sys.argv[2]))
    elif cmd == "mcp":
        print(mcp_result(sys.stdin.read()))
    elif cmd == "check":
        try:
            with open(sys.argv[2], encoding="utf-8") as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            print(f"no report yet ({e})")
            sys.exit(1)
        why = check(report, sys.argv[3], sys.argv[4:])
        if why:
            print(why)
            sys.exit(1)
    elif cmd == "shown":
        with open(sys.argv[2], encoding="utf-8") as f:
            report = json.load(f)
        why = shown(report, sys.argv[3], sys.argv[4], sys.argv[5:])
        if why:
            print(why)
            sys.exit(1)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
