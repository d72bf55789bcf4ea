// The page tm-top --web serves: one HTML document with its style and script inline (no asset from anywhere
// else). Twice a second it fetches /shells.json and draws, per shell and direction, the last minute as tm-graph
// draws a link: the capacity offered shaded, the rate delivered over it, and the mean queueing delay below.
#pragma once

namespace tracemod::top {

inline constexpr const char* kWebPage = R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tm-top</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .3em 0; }
#status { color: #666; margin-bottom: 1em; }
.shell { margin: 0 0 1.2em 0; }
.head { font-family: monospace; font-weight: bold; white-space: pre; overflow: hidden; text-overflow: ellipsis; }
.dirs { display: flex; flex-wrap: wrap; gap: 2em; }
.fig { font-family: monospace; white-space: pre; font-size: 12px; }
canvas { display: block; border-left: 1px solid #999; border-bottom: 1px solid #999; }
</style></head>
<body><h1>tm-top</h1><div id="status">connecting...</div><div id="shells"></div>
<script>
"use strict";
const W = 480, RATE_H = 110, DELAY_H = 60, PERIOD_MS = 500;
const list = document.getElementById("shells"), status = document.getElementById("status");
let updates = 0;

function mbit(bps) { return bps === null ? "-" : (bps / 1e6).toFixed(1); }

function canvas(parent, height) {
  const c = document.createElement("canvas");
  c.width = W; c.height = height; parent.appendChild(c); return c;
}

function series(ctx, values, max, height, fill, stroke) {
  if (!values.length) return;
  const x = i => W - (values.length - i) * (W / 60), y = v => height - (v / max) * (height - 4);
  ctx.beginPath();
  values.forEach((v, i) => {
    const vv = v === null ? 0 : v;
    if (i === 0) ctx.moveTo(x(i), y(vv));
    ctx.lineTo(x(i + 1), y(vv));
  });
  if (fill) { ctx.lineTo(W, height); ctx.lineTo(x(0), height); ctx.closePath(); ctx.fillStyle = fill; ctx.fill(); }
  else { ctx.strokeStyle = stroke; ctx.lineWidth = 1.5; ctx.stroke(); }
}

function drawDirection(box, name, d) {
  const fig = box.querySelector(".fig");
  fig.textContent = name + " " + d.text;  // tm-top's own columns, one per row of its metrics table
  const [rate, dly] = box.querySelectorAll("canvas");
  const r = rate.getContext("2d"), q = dly.getContext("2d");
  r.clearRect(0, 0, W, RATE_H); q.clearRect(0, 0, W, DELAY_H);
  const offered = d.history_offered_bps || [], delivered = d.history_delivered_bps || [];
  const delays = d.history_delay_ms || [];
  const max = Math.max(1e5, ...offered.filter(v => v !== null), ...delivered.filter(v => v !== null)) * 1.1;
  series(r, offered, max, RATE_H, "#cfe3f7", null);
  series(r, delivered, max, RATE_H, null, "#1f5fa8");
  r.fillStyle = "#555"; r.fillText(mbit(max) + " Mbit/s", 4, 12);
  const dmax = Math.max(1, ...delays.filter(v => v !== null)) * 1.1;
  series(q, delays, dmax, DELAY_H, null, "#b8460b");
  q.fillStyle = "#555"; q.fillText("delay, " + dmax.toFixed(0) + " ms", 4, 12);
}

function shellBox(s) {
  let box = document.getElementById("shell-" + s.pid);
  if (box) return box;
  box = document.createElement("div"); box.className = "shell"; box.id = "shell-" + s.pid;
  const head = document.createElement("div"); head.className = "head"; box.appendChild(head);
  const dirs = document.createElement("div"); dirs.className = "dirs"; box.appendChild(dirs);
  for (const name of ["uplink", "downlink"]) {
    const d = document.createElement("div"); d.className = "dir " + name;
    const fig = document.createElement("div"); fig.className = "fig"; d.appendChild(fig);
    canvas(d, RATE_H); canvas(d, DELAY_H); dirs.appendChild(d);
  }
  return box;
}

function render(data) {
  const seen = new Set();
  data.shells.forEach(s => {
    const box = shellBox(s);
    list.appendChild(box);  // appending again keeps the tree order
    seen.add(box.id);
    const line = s.pid + " " + s.tool + " " + s.arguments + (s.command ? " -- " + s.command : "");
    box.querySelector(".head").textContent = "  ".repeat(s.level) + line.replace(/\s+/g, " ") +
      (s.ended ? " (ended)" : "");
    drawDirection(box.querySelector(".uplink"), "up  ", s.uplink);
    drawDirection(box.querySelector(".downlink"), "down", s.downlink);
  });
  for (const box of [...list.children]) if (!seen.has(box.id)) box.remove();
  status.textContent = data.shells.length + " shell" + (data.shells.length === 1 ? "" : "s") + ", updated " +
    new Date().toLocaleTimeString();
  document.body.dataset.updates = ++updates;
}

async function tick() {
  try {
    const r = await fetch("shells.json", {cache: "no-store"});
    render(await r.json());
  } catch (e) {
    status.textContent = "tm-top is not answering";
  }
}
tick();
setInterval(tick, PERIOD_MS);
</script></body></html>
)html";

}  // namespace tracemod::top
