"""The report's inline stylesheet and scripts.

They are Python strings rather than files beside the module so the report
needs no package data to be installed: ``write_report`` works from any install.
The page forbids every network fetch (a Content-Security-Policy), so the report
provably opens offline; ``CHECK_JS`` writes what a browser test needs to know
(errors seen, bars and points actually laid out) into ``#report-check``.
"""

from __future__ import annotations

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:")

CSS = """
:root { --ink:#1f2430; --muted:#6b7280; --line:#e5e7eb; --band:#f8fafc; --accent:#2f6fde;
  --accent-soft:#dbe7fb; --crit:#e8590c; --crit-soft:#fff0e6; --ok:#2b8a3e; --bad:#c92a2a; }
* { box-sizing: border-box; }
body { margin:0;
  font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
  color:var(--ink); background:#f3f4f6; }
main { max-width:1240px; margin:0 auto; padding:22px 26px 40px; }
header h1 { margin:0 0 2px; font-size:24px; letter-spacing:-.01em; }
header .objective { color:var(--muted); margin:0 0 14px; }
.cards { display:flex; flex-wrap:wrap; gap:10px; margin:0 0 10px; }
.card { background:#fff; border:1px solid var(--line); border-radius:10px; padding:9px 14px;
  min-width:118px; }
.card .k { font-size:11px; text-transform:uppercase; letter-spacing:.06em; color:var(--muted); }
.card .v { font-size:21px; font-weight:650; }
.card .v.ok { color:var(--ok); } .card .v.bad { color:var(--bad); }
.path { margin:4px 0 0; color:var(--muted); }
.path b { color:var(--crit); font-weight:600; }
.gain { margin:2px 0 0; } .gain b { color:var(--ok); }
section { background:#fff; border:1px solid var(--line); border-radius:12px; padding:16px 18px;
  margin:16px 0; }
section h2 { margin:0 0 4px; font-size:17px; }
section p.lead { margin:0 0 12px; color:var(--muted); }
.legend { display:inline-flex; gap:14px; font-size:12px; color:var(--muted); margin-left:8px; }
.swatch { display:inline-block; width:12px; height:10px; border-radius:2px; vertical-align:-1px;
  margin-right:4px; }
.swatch.crit { background:var(--crit); } .swatch.norm { background:var(--accent); }
.swatch.slack { background:#cbd5e1; height:4px; vertical-align:2px; }
.swatch.best { background:var(--accent); height:3px; vertical-align:3px; }
.swatch.median { background:#9ca3af; height:3px; vertical-align:3px; }
.scroll { overflow-x:auto; }
svg.chart { display:block; max-width:100%; height:auto; font-size:12px; }
svg text { fill:var(--ink); }
.grid { stroke:var(--line); stroke-width:1; }
.tick, .axis-label { fill:var(--muted); font-size:11px; }
.node rect { fill:#fff; stroke:var(--accent); stroke-width:1.4; }
.node.critical rect { fill:var(--crit-soft); stroke:var(--crit); stroke-width:2.2; }
.node-id { font-weight:700; font-size:13px; }
.node-time { fill:var(--muted); font-size:11px; font-weight:400; }
.node-tool { font-size:11px; fill:#374151; }
.edge { fill:none; stroke:#9aa5b8; stroke-width:1.3; }
.edge.critical { stroke:var(--crit); stroke-width:2.6; }
.arrowhead { fill:#9aa5b8; } .arrowhead.critical { fill:var(--crit); }
.row-band { fill:transparent; }
.gantt-row:nth-child(even) .row-band { fill:var(--band); }
.row-id { font-weight:700; } .row-tool { fill:#374151; }
.gantt-bar { fill:var(--accent); } .gantt-bar.critical { fill:var(--crit); }
.slack { fill:#cbd5e1; }
.bar-label { font-size:11px; fill:var(--muted); } .bar-label.inside { fill:#fff; font-weight:600; }
.makespan { stroke:var(--ink); stroke-width:1.2; stroke-dasharray:4 3; }
.makespan-label { font-size:11px; font-weight:600; }
.usage-name { font-weight:600; } .usage-note { fill:var(--muted); font-size:11px; }
.usage-area { fill:#a5c3f3; stroke:var(--accent); stroke-width:1.2; }
.usage-area.over { fill:#ffc9c9; stroke:var(--bad); }
.usage-base { stroke:#cbd5e1; }
.capacity { stroke:var(--bad); stroke-width:1.2; stroke-dasharray:5 3; }
.capacity-label { fill:var(--bad); font-size:11px; }
.hl rect, rect.hl { stroke:#111 !important; stroke-width:2.5 !important; }
.hl .row-band { fill:#fef3c7 !important; }
.panels { display:grid; grid-template-columns:repeat(auto-fill,minmax(270px,1fr)); gap:14px; }
.panel h3 { margin:0 0 2px; font-size:14px; }
.panel .final { color:var(--muted); font-size:12px; margin:0 0 4px; }
.best-line { fill:none; stroke:var(--accent); stroke-width:2; }
.median-line { fill:none; stroke:#9ca3af; stroke-width:1.5; stroke-dasharray:4 3; }
.conv-point { fill:var(--accent); }
table { border-collapse:collapse; width:100%; font-size:13px; }
th, td { text-align:left; padding:5px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:11px; text-transform:uppercase; letter-spacing:.05em; color:var(--muted); font-weight:600;
  background:#fafafa; position:sticky; top:0; }
th.sortable { cursor:pointer; user-select:none; } th.sortable:hover { color:var(--ink); }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
tr.best td { background:#eef4ff; font-weight:600; }
.yes { color:var(--ok); } .no { color:var(--bad); }
.op { display:inline-block; padding:0 7px; border-radius:9px; background:#eef2f7; font-size:12px;
  white-space:nowrap; }
.op.llm { background:#f3e8ff; color:#6b21a8; }
code, .patch { font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; }
.patch { margin:0; white-space:pre-wrap; word-break:break-word; }
.reason { font-style:italic; color:#4b5563; }
.meta { color:var(--muted); font-size:12px; }
.delta.better { color:var(--ok); font-weight:600; } .delta.worse { color:var(--bad); }
dl.facts { display:grid; grid-template-columns:max-content 1fr; gap:4px 18px; margin:0; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; font-variant-numeric:tabular-nums; }
.note { color:var(--muted); font-size:12px; }
footer { color:var(--muted); font-size:12px; text-align:center; }
"""

ERRORS_JS = """
window.__reportErrors = [];
(function () {
  function note(text) { window.__reportErrors.push(String(text)); }
  window.addEventListener('error', function (e) {
    note(e.message || ('failed to load ' + ((e.target && (e.target.src || e.target.href)) || '?')));
  }, true);
  window.addEventListener('unhandledrejection', function (e) { note('unhandled rejection: ' + e.reason); });
  document.addEventListener('securitypolicyviolation', function (e) { note('blocked: ' + e.blockedURI); });
  var original = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
})();
"""

PAGE_JS = """
(function () {
  function each(selector, fn) { Array.prototype.forEach.call(document.querySelectorAll(selector), fn); }
  // Hovering a task anywhere highlights it in the graph and the Gantt chart alike.
  function mark(task, on) {
    each('[data-task="' + task + '"]', function (el) { el.classList.toggle('hl', on); });
  }
  each('.node, .gantt-row', function (el) {
    el.addEventListener('mouseenter', function () { mark(el.getAttribute('data-task'), true); });
    el.addEventListener('mouseleave', function () { mark(el.getAttribute('data-task'), false); });
  });
  // Population table: click a header to sort by it.
  each('table.sortable', function (table) {
    var heads = table.querySelectorAll('th');
    Array.prototype.forEach.call(heads, function (th, col) {
      th.classList.add('sortable');
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute('data-dir') === 'asc' ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('data-dir'); });
        th.setAttribute('data-dir', dir === 1 ? 'asc' : 'desc');
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute('data-sort') || a.cells[col].textContent;
          var y = b.cells[col].getAttribute('data-sort') || b.cells[col].textContent;
          var nx = parseFloat(x), ny = parseFloat(y);
          if (!isNaN(nx) && !isNaN(ny)) { return dir * (nx - ny); }
          return dir * x.localeCompare(y);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
"""

CHECK_JS = """
(function () {
  // What a browser test reads back with --dump-dom: only elements that were really laid out count.
  function shown(el) { var r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; }
  function count(selector, root) {
    return Array.prototype.filter.call((root || document).querySelectorAll(selector), shown).length;
  }
  var check = document.getElementById('report-check');
  var points = {};
  Array.prototype.forEach.call(document.querySelectorAll('svg.convergence'), function (svg) {
    points[svg.getAttribute('data-objective')] = count('circle.conv-point', svg);
  });
  check.setAttribute('data-bars', String(count('svg.gantt rect.gantt-bar')));
  check.setAttribute('data-nodes', String(count('svg.graph g.node')));
  check.setAttribute('data-points', JSON.stringify(points));
  check.setAttribute('data-errors', JSON.stringify(window.__reportErrors));
  check.setAttribute('data-height', String(Math.ceil(document.documentElement.scrollHeight)));
  check.setAttribute('data-ready', '1');
})();
"""
