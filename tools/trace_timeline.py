#!/usr/bin/env python3
"""Draws a parax trace (Chrome trace-event JSON, as profiler::stop_trace writes it) as a
static HTML timeline: one row per track (threads, then devices), one box per span coloured
by its category, labelled where it fits. For pictures in docs; Perfetto is the tool to
explore a trace with.

Usage: trace_timeline.py TRACE.json OUT.html [--from-us T0] [--to-us T1] [--width PX]
"""
import argparse
import html
import json

COLOURS = {
    "kernel": "#4e79a7", "collective": "#e15759", "engine": "#f28e2b", "execute": "#bab0ac",
    "compile": "#76b7b2", "trace": "#59a14f", "transfer": "#edc948", "io": "#b07aa1",
    "user": "#ff9da7",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--from-us", type=float)
    ap.add_argument("--to-us", type=float)
    ap.add_argument("--width", type=int, default=1400)
    args = ap.parse_args()
    events = json.load(open(args.trace))["traceEvents"]
    names = {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    spans = [e for e in events if e["ph"] == "X"]
    t0 = args.from_us if args.from_us is not None else min(e["ts"] for e in spans)
    t1 = args.to_us if args.to_us is not None else max(e["ts"] + e["dur"] for e in spans)
    spans = [e for e in spans if e["ts"] + e["dur"] >= t0 and e["ts"] <= t1]
    tracks = sorted({(e["pid"], e["tid"]) for e in spans})
    label_w, row_h, top = 110, 26, 30
    plot_w = args.width - label_w - 10
    scale = plot_w / max(t1 - t0, 1)
    rows = {t: i for i, t in enumerate(tracks)}
    height = top + row_h * len(tracks) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{args.width}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{args.width}" height="{height}" fill="#ffffff"/>']
    for t, i in rows.items():
        y = top + i * row_h
        name = names.get(t, f"tid {t[1]}")
        label = f"p{t[0]} {name}" if len({p for p, _ in tracks}) > 1 else name
        out.append(f'<text x="4" y="{y + 17}" fill="#333">{html.escape(label)}</text>')
        out.append(f'<line x1="{label_w}" y1="{y + row_h - 1}" x2="{args.width - 10}" '
                   f'y2="{y + row_h - 1}" stroke="#eee"/>')
    for e in sorted(spans, key=lambda e: -e["dur"]):  # enclosing spans first, under the rest
        y = top + rows[(e["pid"], e["tid"])] * row_h + 3
        x = label_w + (max(e["ts"], t0) - t0) * scale
        w = max((min(e["ts"] + e["dur"], t1) - max(e["ts"], t0)) * scale, 1)
        colour = COLOURS.get(e.get("cat"), "#999")
        title = html.escape(f'{e["name"]} ({e.get("cat")}, {e["dur"]} us) {json.dumps(e.get("args", {}))}')
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row_h - 7}" '
                   f'fill="{colour}"><title>{title}</title></rect>')
        if w > 7 * len(e["name"]):
            out.append(f'<text x="{x + 3:.1f}" y="{y + 13}" fill="#fff">{html.escape(e["name"])}</text>')
    ticks = 10
    for k in range(ticks + 1):
        x = label_w + plot_w * k / ticks
        us = (t1 - t0) * k / ticks
        out.append(f'<text x="{x:.1f}" y="{height - 12}" fill="#555" text-anchor="middle">'
                   f'{us / 1000:.2f} ms</text>')
    x = label_w
    for cat, colour in COLOURS.items():
        out.append(f'<rect x="{x}" y="6" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 16}" y="16" fill="#333">{cat}</text>')
        x += 100
    out.append("</svg>")
    with open(args.out, "w") as f:
        f.write('<!DOCTYPE html><html><body style="margin:0">' + "\n".join(out) + "</body></html>\n")


if __name__ == "__main__":
    main()
