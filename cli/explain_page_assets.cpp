// The style and script of the pages `specdec explain --html` and `specdec compare --html` write
// (explain_html.cpp assembles them with the run's data): the style and the rendering both pages
// share (header, intro, draft tree with zoom and pan, probability bars on a 0..1 axis, acceptance
// tests, cost strip, text by step), and the explain page's own script. Everything is inline: the
// pages load nothing from anywhere.
namespace specdec::cli {

extern const char* const kPageStyle = R"CSS(
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { padding: 10px 16px; background: #22313f; color: #fff; }
header h1 { font-size: 17px; margin: 0 0 4px 0; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 1px 12px; margin: 0; font-size: 12.5px; }
dl.facts dt { opacity: .7; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
dl.facts dd.text { font-family: monospace; }
header dl.facts { max-width: 1100px; }
details.intro { margin: 0; padding: 6px 16px; background: #fff8e1; border-bottom: 1px solid #f0e0a8; font-size: 13.5px; }
details.intro summary { cursor: pointer; font-weight: 600; }
details.intro p { margin: 6px 0; max-width: 980px; }
#controls { padding: 8px 16px; display: flex; gap: 8px; align-items: center; background: #e9edf1; flex-wrap: wrap; }
#controls button { font-size: 14px; padding: 3px 10px; }
#step-title { font-weight: 600; margin-left: 8px; }
#cut-note { color: #b3261e; font-weight: 600; }
main { display: grid; grid-template-columns: minmax(0, 1.25fr) minmax(0, 1fr); gap: 12px; padding: 12px 16px; }
main > div { min-width: 0; }
@media (max-width: 980px) { main { grid-template-columns: minmax(0, 1fr); } }
section { background: #fff; border: 1px solid #d8dde3; border-radius: 6px; padding: 8px 10px; margin-bottom: 12px; min-width: 0; }
section h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #5b6770; margin: 0 0 6px 0; }
.tree-tools { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; font-size: 12px; margin-bottom: 4px; }
.tree-tools button { font-size: 12px; padding: 1px 8px; }
.tree-tools .zoom-note { color: #5b6770; }
.tree-box { height: 420px; max-height: 420px; border: 1px solid #e3e7eb; border-radius: 4px; background: #fcfcfd; overflow: hidden; touch-action: none; }
.tree-box svg { display: block; width: 100%; height: 100%; cursor: grab; }
.tree-box svg.dragging { cursor: grabbing; }
svg .node rect { stroke-width: 1.5; cursor: pointer; }
svg .node text { font: 13px monospace; pointer-events: none; }
svg .node.selected rect { stroke: #000; stroke-width: 3; }
svg .accepted rect { fill: #c8ecd2; stroke: #2e9d4f; }
svg .rejected rect { fill: #f8cccc; stroke: #c62828; }
svg .unreached rect { fill: #f1f1f1; stroke: #9e9e9e; stroke-dasharray: 3 3; }
svg .discarded rect { fill: #eef7f0; stroke: #2e9d4f; stroke-dasharray: 6 3; }
svg .bonus rect { fill: #ffe9a8; stroke: #c99700; }
svg .correction rect { fill: #ffd7b0; stroke: #d86f00; }
svg .target rect { fill: #cfe3ff; stroke: #2962ff; }
svg .root rect { fill: #e3e7eb; stroke: #52606d; }
svg .cut rect { stroke-dasharray: 6 3; opacity: .6; }
svg line { stroke: #9aa5b1; stroke-width: 1.5; }
svg line.accepted, svg line.bonus, svg line.correction, svg line.target { stroke: #2e7d32; stroke-width: 2.5; }
.legend { font-size: 12px; display: flex; flex-wrap: wrap; gap: 10px; margin-top: 4px; }
.legend span::before { content: ""; display: inline-block; width: 11px; height: 11px; margin-right: 4px; vertical-align: -1px; border: 1.5px solid; }
.legend .accepted::before { background: #c8ecd2; border-color: #2e9d4f; }
.legend .rejected::before { background: #f8cccc; border-color: #c62828; }
.legend .unreached::before { background: #f1f1f1; border-color: #9e9e9e; border-style: dashed; }
.legend .discarded::before { background: #eef7f0; border-color: #2e9d4f; border-style: dashed; }
.legend .bonus::before { background: #ffe9a8; border-color: #c99700; }
.legend .correction::before { background: #ffd7b0; border-color: #d86f00; }
.legend .target::before { background: #cfe3ff; border-color: #2962ff; }
table.bars { border-collapse: collapse; width: 100%; font-size: 12px; table-layout: auto; }
table.bars td { padding: 1px 4px; }
table.bars td.tok { font-family: monospace; text-align: right; width: 4em; white-space: nowrap; }
table.bars td.nums { white-space: nowrap; font-variant-numeric: tabular-nums; }
table.bars td.scale { width: 100%; min-width: 80px; }
.track { position: relative; border-right: 1px solid #cfd6dd;
  background-image: repeating-linear-gradient(to right, #cfd6dd 0, #cfd6dd 1px, transparent 1px, transparent 25%); }
table.bars tr.hl td { background-color: #fff4c2; }
.bar { height: 9px; display: block; margin: 1px 0; }
.bar.p { background: #2962ff; } .bar.q { background: #ff8f00; } .bar.r { background: #8e24aa; }
.axis { position: relative; height: 22px; border-top: 1px solid #52606d; margin-top: 2px; }
.axis .tick { position: absolute; top: 0; width: 0; height: 5px; border-left: 1px solid #52606d; }
.axis .tick span { position: absolute; top: 5px; transform: translateX(-50%); font-size: 11px; color: #3e4c59; }
.axis-name { font-size: 11px; color: #5b6770; text-align: center; }
.key { font-size: 12px; margin: 2px 0 6px 0; }
.key i { display: inline-block; width: 18px; height: 8px; margin: 0 3px 0 8px; }
.test { font-family: monospace; font-size: 13px; background: #f4f6f8; padding: 6px 8px; border-radius: 4px; white-space: pre-wrap; overflow-wrap: anywhere; }
.verdict-accept { color: #1b7f3b; font-weight: 700; } .verdict-reject { color: #b3261e; font-weight: 700; }
.text-box { font-family: monospace; font-size: 14px; line-height: 1.9; word-break: break-all; }
.text-box .prompt { color: #7b8794; }
.text-box .tok { padding: 1px 0; border-bottom: 3px solid transparent; }
.text-box .s0 { background: #e3f2fd; } .text-box .s1 { background: #e8f5e9; }
.text-box .current { border-bottom-color: #d86f00; font-weight: 700; }
.counters { display: grid; grid-template-columns: auto auto; gap: 1px 14px; font-size: 13px; }
.counters b { font-variant-numeric: tabular-nums; }
.cost .row { display: grid; grid-template-columns: 6.5em minmax(0, 1fr); gap: 6px; align-items: center; margin: 3px 0; font-size: 12.5px; }
.cost .row .who { color: #5b6770; }
.cost .blocks { display: flex; flex-wrap: wrap; gap: 2px; align-items: center; }
.cost .blk { display: inline-block; height: 16px; min-width: 12px; border-radius: 2px; font-size: 10px; line-height: 16px; text-align: center; color: #fff; }
.cost .blk.d { background: #ff8f00; width: 12px; }
.cost .blk.t { background: #2962ff; padding: 0 5px; }
.cost .blk.t1 { background: #90a4ae; width: 12px; }
.cost .out { margin-left: 6px; font-weight: 600; }
.cost .more { font-size: 11px; color: #5b6770; margin-left: 3px; }
.cost .why, .cost .measured, .cost .total { font-size: 12px; color: #3e4c59; margin-top: 4px; }
.cost .measured { color: #5b6770; }
#parallel .slots { display: flex; gap: 6px; flex-wrap: wrap; }
#parallel .slot { border: 1px solid #b0bec5; border-radius: 4px; padding: 4px 6px; min-width: 70px; font-size: 12px; }
#parallel .slot .in { color: #5b6770; font-size: 11px; }
#parallel .slot span { font-family: monospace; display: inline-block; padding: 0 3px; margin: 1px; border-radius: 3px; }
#parallel .accepted { background: #c8ecd2; } #parallel .rejected { background: #f8cccc; }
#parallel .unreached { background: #f1f1f1; } #parallel .discarded { background: #eef7f0; }
#source .window { font-family: monospace; font-size: 14px; line-height: 1.9; word-break: break-all; white-space: pre-wrap; margin: 4px 0; }
#source .window span { padding: 1px 0; }
#source .window .match { background: #fff4c2; border-bottom: 3px solid #c99700; }
#source .window .copied { background: #c8ecd2; border-bottom: 3px solid #2e9d4f; }
#source .window .before, #source .window .after { color: #7b8794; }
#source .suffix { background: #fff4c2; font-family: monospace; white-space: pre-wrap; }
#source .copied-key { background: #c8ecd2; }
.help { font-size: 12px; color: #5b6770; }
#selftest-result { display: none; }
)CSS";

extern const char* const kPageScript = R"JS(
'use strict';
// The rendering shared by the explain page (one run, step by step) and the compare page (several
// methods side by side): header, intro, draft tree with zoom and pan, probability bars on a 0..1
// axis, acceptance tests, the cost strip, the text marked by step.
const pageErrors = [];
window.addEventListener('error', e => pageErrors.push(String(e.message || e)));
{
  const original = console.error.bind(console);
  console.error = (...a) => { pageErrors.push(a.map(String).join(' ')); original(...a); };
}
const D = JSON.parse(document.getElementById('run-data').textContent);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}
function svgEl(tag, attrs) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}
const f3 = x => (x === null || x === undefined) ? '—' : Number(x).toFixed(3);
const q = t => "'" + t + "'";
const plural = (n, w) => n + ' ' + w + (n === 1 ? '' : 's');
const statusWord = { accepted: 'accepted', rejected: 'rejected', unreached: 'not reached (never tested)',
  discarded: 'accepted, then discarded: the step was cut', bonus: 'bonus', correction: 'correction', target: "the target's token" };

// The page header: a title and labelled facts in words.
function pageHeader(title, facts) {
  const dl = el('dl', { class: 'facts' });
  for (const [k, v] of facts) dl.append(el('dt', { text: k }), el('dd', { class: k === 'prompt' || k === 'output' ? 'text' : '', text: v }));
  return el('header', {}, el('h1', { text: title }), dl);
}

// What the page shows, for a reader who has not read the tutorial (collapsed; one click opens it).
function pageIntro(compare) {
  const d = el('details', { class: 'intro', id: 'intro' });
  d.append(el('summary', { text: 'What this page shows: speculative decoding — draft, verify, accept or reject, bonus token (click to read)' }),
    el('p', { text: 'A large language model (the target) normally makes one token per forward pass: sequential decoding. ' +
      'Speculative decoding lets a cheap drafter guess several tokens ahead — the drafts, a chain or a tree — and the target then ' +
      'verifies all of them in one forward pass, which gives its own distribution after every draft at once.' }),
    el('p', { text: 'Walking down from the root (the last token emitted), each draft is tested against the target\'s distribution at its ' +
      'parent: under greedy decoding a draft is accepted if it is the target\'s top choice; under sampling it is accepted with probability ' +
      'min(1, p/q), p the target\'s and q the draft\'s probability. The first rejection ends the walk and the target\'s own choice there ' +
      'is emitted instead: the correction. If every draft on the path is accepted, the target\'s distribution after the last one gives ' +
      'one more token for free: the bonus.' }),
    el('p', { text: 'So every step emits the accepted drafts plus one token of the target, at least one token per target forward, and the ' +
      'output is the target\'s own (token for token under greedy and coupled sampling, in distribution under plain sampling). ' +
      'The acceptance length (AL) is the tokens a step emits; sequential decoding has AL 1.' }),
    el('p', { text: compare
      ? 'Below, each column is one method on the same prompt: its tokens per step, the draft tree or chain of the selected step, what ' +
        'that step cost in forwards, and its output. Click a step bar to open that step.'
      : 'Below: the draft tree of the step (drag to pan, scroll or +/− to zoom; "whole tree" and "accepted path" refit it), the selected ' +
        'node\'s probabilities on a 0–1 axis with its test, what the step cost in forwards against sequential decoding, the text so far ' +
        'and the counters. ← → move between steps, ↑ ↓ between nodes.' }));
  return d;
}

function legend() {
  const l = el('div', { class: 'legend' });
  for (const k of ['accepted', 'rejected', 'unreached', 'discarded', 'bonus', 'correction', 'target'])
    l.append(el('span', { class: k, text: k === 'unreached' ? 'not reached' : k === 'discarded' ? 'accepted, cut' : k }));
  return l;
}

function children(s, p) { const c = []; s.nodes.forEach((n, i) => { if (n.parent === p) c.push(i); }); return c; }
function nodeOrder(s) { return ['root', ...s.nodes.map((_, i) => String(i)), 'final']; }

// The accepted path: the root, the accepted drafts (kept or cut) and the final token.
function pathKeys(s) {
  const keys = ['root', 'final'];
  s.nodes.forEach((n, i) => { if (n.status === 'accepted' || n.status === 'discarded') keys.push(String(i)); });
  return keys;
}
// The path and the drafts rejected on the way: every node the walk tested.
function testedKeys(s) {
  const keys = pathKeys(s);
  s.nodes.forEach((n, i) => { if (n.status === 'rejected') keys.push(String(i)); });
  return keys;
}

// One step's draft tree as SVG in a fixed-height box, fitted to it: the whole tree when it is
// legible at that size, else the tested nodes or the accepted path (root, accepted drafts, final
// token); drag pans, the wheel and +/− zoom, "whole tree" and "accepted path" refit.
class TreeView {
  constructor(onSelect) {
    this.onSelect = onSelect;
    this.box = el('div', { class: 'tree-box' });
    this.note = el('span', { class: 'zoom-note' });
    const button = (cls, text, title, f) => { const b = el('button', { class: cls, text, title }); b.onclick = f; return b; };
    this.tools = el('div', { class: 'tree-tools' },
      button('fit-all', 'whole tree', 'fit the whole tree into the panel', () => this.fit(Object.keys(this.pos))),
      button('fit-path', 'accepted path', 'fit the root, the accepted drafts and the final token', () => this.fit(pathKeys(this.s))),
      button('zoom-in', '+', 'zoom in', () => this.zoomBy(1.25)),
      button('zoom-out', '−', 'zoom out', () => this.zoomBy(0.8)), this.note);
    this.element = el('div', { class: 'tree-view' }, this.tools, this.box, legend());
    this.view = { k: 1, x: 0, y: 0 };
    window.addEventListener('resize', () => { if (this.s) this.fitDefault(); });
  }

  draw(s) {
    this.s = s;
    const H = 32;
    const pos = {};
    let slot = 0;
    const width = t => Math.max(34, 16 + 8.2 * [...t].length);
    const labelOf = key => key === 'root' ? (s.sequential ? (s.index === 0 ? 'prompt' : 'context') : q(s.pending))
      : key === 'final' ? '+' + q(s.final.t) : q(s.nodes[+key].t);
    // Columns as wide as the widest label and a gap for the edges: a deep tree stays narrow.
    const W = 26 + Math.max(width(labelOf('root')), width(labelOf('final')), ...s.nodes.map((_, i) => width(labelOf(String(i)))));
    function place(key, depth, kids) {
      const ys = kids.map(k => k());
      const y = ys.length ? (ys[0] + ys[ys.length - 1]) / 2 : (slot++) * H;
      pos[key] = { x: depth * W, y, w: width(labelOf(key)) };
      return y;
    }
    function visit(p, depth) {
      const kids = children(s, p).map(c => () => visit(c, depth + 1));
      if (s.final.point === p) kids.push(() => place('final', depth + 1, []));
      return place(p < 0 ? 'root' : String(p), depth, kids);
    }
    visit(-1, 0);
    this.pos = pos;
    const classOf = key => key === 'root' ? 'root' : key === 'final' ? s.final.kind + (s.final.kept ? '' : ' cut') : s.nodes[+key].status;
    const parentOf = key => key === 'root' ? null : key === 'final' ? (s.final.point < 0 ? 'root' : String(s.final.point))
      : (s.nodes[+key].parent < 0 ? 'root' : String(s.nodes[+key].parent));
    const svg = svgEl('svg', { class: 'tree', role: 'img', 'aria-label': 'draft tree of step ' + s.index });
    const g = svgEl('g', { class: 'viewport' });
    svg.append(g);
    const keys = Object.keys(pos);
    for (const k of keys) {
      const p = parentOf(k);
      if (p === null) continue;
      const a = pos[p], b = pos[k];
      g.append(svgEl('line', { x1: a.x + a.w, y1: a.y + 13, x2: b.x, y2: b.y + 13, class: classOf(k).split(' ')[0] }));
    }
    for (const k of keys) {
      const node = svgEl('g', { class: 'node ' + classOf(k), 'data-node': k, transform: `translate(${pos[k].x},${pos[k].y})` });
      node.append(svgEl('rect', { width: pos[k].w, height: 26, rx: 5 }));
      const text = svgEl('text', { x: 8, y: 17 });
      text.textContent = labelOf(k);
      node.append(text);
      const tip = svgEl('title');
      tip.textContent = k === 'root' ? 'root' : k === 'final' ? s.final.kind : 'node ' + k + ': ' + statusWord[s.nodes[+k].status];
      node.append(tip);
      node.addEventListener('click', () => { if (!this.moved) this.onSelect(k); });
      g.append(node);
    }
    this.svg = svg;
    this.g = g;
    // A small tree gets a box of its own height (up to the panel's maximum), not a mostly empty one.
    const maxH = parseFloat(getComputedStyle(this.box).maxHeight) || 420;
    const b = this.bounds(keys);
    this.box.style.height = Math.min(maxH, Math.max(140, b.y1 - b.y0 + 28)) + 'px';
    this.box.replaceChildren(svg);
    this.pannable(svg);
    this.fitDefault();
  }

  bounds(keys) {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const k of keys) {
      const p = this.pos[k];
      if (!p) continue;
      x0 = Math.min(x0, p.x); y0 = Math.min(y0, p.y); x1 = Math.max(x1, p.x + p.w); y1 = Math.max(y1, p.y + 26);
    }
    return { x0, y0, x1, y1 };
  }
  size() { return { w: this.box.clientWidth || 600, h: this.box.clientHeight || 420 }; }

  // The scale and offset that show `keys` whole and centred, never magnified above 1.
  fit(keys) {
    const b = this.bounds(keys), { w, h } = this.size(), k = this.scaleFor(keys);
    this.setView(k, (w - k * (b.x0 + b.x1)) / 2, (h - k * (b.y0 + b.y1)) / 2);
  }
  scaleFor(keys) {
    const b = this.bounds(keys), m = 14, { w, h } = this.size();
    return Math.min(1, (w - 2 * m) / (b.x1 - b.x0), (h - 2 * m) / (b.y1 - b.y0));
  }
  // The whole tree when it stays legible (scale 0.6 or more), else every tested node when they
  // do, else the accepted path whatever the scale.
  fitDefault() {
    const choices = [['tree', Object.keys(this.pos)], ['tested', testedKeys(this.s)], ['path', pathKeys(this.s)]];
    const [name, keys] = choices.find(([, k], i) => i === choices.length - 1 || this.scaleFor(k) >= 0.6);
    this.fit(keys);
    this.fitted = name;
  }
  setView(k, x, y) {
    this.view = { k, x, y };
    this.g.setAttribute('transform', `translate(${x.toFixed(1)},${y.toFixed(1)}) scale(${k.toFixed(4)})`);
    const n = this.s.nodes.length;
    this.note.textContent = Math.round(100 * k) + '%' + (n ? ' · ' + plural(n, 'draft') : '');
  }
  zoomBy(f, cx, cy) {
    const { w, h } = this.size(), v = this.view;
    if (cx === undefined) { cx = w / 2; cy = h / 2; }
    const k = Math.max(0.1, Math.min(3, v.k * f));
    this.setView(k, cx - (cx - v.x) * k / v.k, cy - (cy - v.y) * k / v.k);
  }
  // Brings a node into view (keyboard selection of a node outside the box).
  reveal(key) {
    const p = this.pos[key];
    if (!p) return;
    const { w, h } = this.size(), v = this.view;
    const l = v.x + v.k * p.x, t = v.y + v.k * p.y, r = l + v.k * p.w, b = t + v.k * 26;
    if (l >= 0 && t >= 0 && r <= w && b <= h) return;
    this.setView(v.k, w / 2 - v.k * (p.x + p.w / 2), h / 2 - v.k * (p.y + 13));
  }
  // Marks the selected node; `reveal` pans to it when it is outside the box (keyboard moves), which
  // a step's opening selection must not do: the fitted path stays in view.
  select(key, reveal) {
    for (const n of this.svg.querySelectorAll('.node')) n.classList.toggle('selected', n.getAttribute('data-node') === key);
    if (reveal) this.reveal(key);
  }
  pannable(svg) {
    let start = null;
    svg.addEventListener('pointerdown', e => { start = { x: e.clientX, y: e.clientY, v: { ...this.view } }; this.moved = false; });
    svg.addEventListener('pointermove', e => {
      if (!start) return;
      const dx = e.clientX - start.x, dy = e.clientY - start.y;
      if (!this.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!this.moved) { this.moved = true; svg.setPointerCapture(e.pointerId); svg.classList.add('dragging'); }
      this.setView(start.v.k, start.v.x + dx, start.v.y + dy);
    });
    const end = () => { start = null; svg.classList.remove('dragging'); };
    svg.addEventListener('pointerup', end);
    svg.addEventListener('pointercancel', end);
    svg.addEventListener('wheel', e => {
      e.preventDefault();
      const r = svg.getBoundingClientRect();
      this.zoomBy(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
  }
}

// Probability bars on a fixed 0..1 axis with ticks, so that bars of different nodes and steps
// compare. rows: [{t, values: {key: number|null}}]; series: [{key, name, cls}].
function bars(rows, series, highlight) {
  const key = el('div', { class: 'key' });
  for (const s of series) key.append(el('i', { class: 'bar ' + s.cls }), s.name);
  const table = el('table', { class: 'bars' });
  for (const r of rows) {
    const tr = el('tr', { class: r.t === highlight ? 'hl' : '' }, el('td', { class: 'tok', text: q(r.t) }));
    const track = el('div', { class: 'track' });
    const nums = el('td', { class: 'nums' });
    for (const s of series) {
      const v = r.values[s.key];
      const known = v !== null && v !== undefined;
      track.append(el('span', { class: 'bar ' + s.cls, 'data-value': known ? String(v) : '', style: `width:${known ? (100 * v).toFixed(2) : 0}%` }));
      nums.append(el('div', { text: s.name.split(' ')[0] + ' ' + (known ? f3(v) : '—') }));
    }
    tr.append(el('td', { class: 'scale' }, track), nums);
    table.append(tr);
  }
  const axis = el('div', { class: 'axis' });
  for (const v of [0, 0.25, 0.5, 0.75, 1]) axis.append(el('span', { class: 'tick', 'data-value': String(v), style: `left:${100 * v}%` }, el('span', { text: String(v) })));
  table.append(el('tr', { class: 'axis-row' }, el('td'), el('td', { class: 'scale' }, axis, el('div', { class: 'axis-name', text: 'probability' })), el('td')));
  return el('div', { class: 'prob' }, key, table);
}

function pointBars(R, s, row, highlight, extra) {
  const mode = R.sampling.mode;
  const pt = s.points[row];
  const hasQ = pt.top.some(e => e.q !== null);
  const stepHasQ = s.points.some(p => p.top.some(e => e.q !== null));
  const rows = pt.top.map(e => ({ t: e.t, values: { p: e.p, q: e.q } }));
  if (extra && !rows.some(r => r.t === extra.t)) rows.push({ t: extra.t, values: { p: extra.p, q: extra.q } });
  const series = [{ key: 'p', name: 'p target', cls: 'p' }];
  if (hasQ) series.push({ key: 'q', name: 'q draft', cls: 'q' });
  const box = bars(rows, series, highlight);
  if (!stepHasQ && !s.sequential && mode === 'sample' && s.nodes.length)
    box.append(el('div', { class: 'help', text: 'The drafter chose deterministically (its top candidates): q is one-hot on each drafted token, so min(1, p/q) = p.' }));
  if (mode === 'greedy') box.append(el('div', { class: 'help', text: 'Greedy decoding: p shown as the softmax at T=1; the target\'s choice is its argmax.' }));
  return box;
}

function testText(mode, t) {
  if (mode === 'sample') {
    const det = t.q === null;
    let s = '';
    if (t.removed.length) {
      s += 'after rejecting ' + t.removed.map(q).join(', ') + ' here, the test uses the residual\n' +
        "  p' = norm(max(0, p − q))" + (det ? ' (one-hot q: p without the rejected tokens)' : '') + '\n' +
        "  p(" + q(t.t) + ') = ' + f3(t.p) + "  →  p'(" + q(t.t) + ') = ' + f3(t.p_used) + '\n';
      if (!det) s += "  q(" + q(t.t) + ') = ' + f3(t.q) + "  →  q'(" + q(t.t) + ') = ' + f3(t.q_used) + '  (q without the rejected, renormalised)\n';
      s += (det ? "acceptance probability p' = " : "acceptance probability min(1, p'/q') = ") + f3(t.accept_prob) + '\n';
    } else {
      s += 'p(' + q(t.t) + ') = ' + f3(t.p) + (det ? '  (q one-hot)' : '   q(' + q(t.t) + ') = ' + f3(t.q)) + '\n';
      s += (det ? 'acceptance probability p = ' : 'acceptance probability min(1, p/q) = ') + f3(t.accept_prob) + '\n';
    }
    s += 'uniform draw u = ' + f3(t.u) + (t.accepted ? '  <  ' : '  ≥  ') + f3(t.accept_prob);
    return s;
  }
  if (mode === 'greedy') {
    return 'p(' + q(t.t) + ') = ' + f3(t.p) + "\nthe target's top choice: " + q(t.choice) + ' (p = ' + f3(t.choice_p) + ')\n' +
      (t.accepted ? 'the draft is the top choice' : 'the draft is not the top choice');
  }
  return 'coupled sampling: the target picks argmax over tokens of logit/T + g (Gumbel noise keyed by position and token)\n' +
    'score(' + q(t.t) + ') = ' + (t.score === null ? '−∞ (outside top-k / top-p)' : f3(t.score)) + '\n' +
    'argmax ' + q(t.choice) + ' with score ' + f3(t.choice_score) + ' (p = ' + f3(t.choice_p) + ')\n' +
    (t.accepted ? 'the draft is the argmax' : 'the draft is not the argmax');
}

function findTest(s, n) {
  for (const pt of s.points) for (const t of pt.tests) if (t.node === n) return t;
  return null;
}

// What the selected node of step `s` of run `R` shows: its distribution and its test.
function nodeDetail(R, s, key) {
  const mode = R.sampling.mode;
  const d = el('div', { class: 'detail' });
  if (key === 'root') {
    d.append(el('div', { text: s.sequential ? 'The target reads the context and predicts the next token.'
      : 'Root: the pending token ' + q(s.pending) + ' (the last token emitted), position ' + (s.position - 1) +
        '. The target\'s distribution after it judges the depth-1 drafts.' }));
    d.append(pointBars(R, s, 0, s.sequential ? s.final.t : null));
    return d;
  }
  if (key === 'final') {
    const f = s.final;
    const where = f.point < 0 ? 'at the root' : 'after node ' + f.point + ' ' + q(s.nodes[f.point].t);
    const head = f.kind === 'bonus' ? 'Bonus token: every draft on the path was accepted, so the target\'s own distribution ' + where + ' gives one more token.'
      : f.kind === 'correction' ? 'Correction token: no draft ' + where + ' was accepted; the target chooses the token instead.'
      : (s.index === 0 ? 'Prefill: the prompt\'s last logits give the first token.' : 'Sequential decoding: one target forward, one token.');
    d.append(el('div', { text: head + (f.kept ? '' : '  (Discarded: the step was cut.)') }));
    const row = f.point + 1;
    if (f.from === 'residual') {
      // p and q at the point, and the residual drawn from (its entries above 0.0005).
      const vals = {};
      const hasQ = s.points[row].top.some(e => e.q !== null);
      for (const e of s.points[row].top) vals[e.t] = { p: e.p, q: e.q, r: null };
      for (const e of f.distribution) {
        if (e.p < 0.0005 && e.t !== f.t) continue;
        vals[e.t] = vals[e.t] || { p: null, q: null };
        vals[e.t].r = e.p;
      }
      const rows = Object.entries(vals).map(([t, v]) => ({ t, values: v }));
      const series = [{ key: 'p', name: 'p target', cls: 'p' }];
      if (hasQ) series.push({ key: 'q', name: 'q draft', cls: 'q' });
      series.push({ key: 'r', name: "p' residual", cls: 'r' });
      d.append(bars(rows, series, f.t));
      d.append(el('div', { class: 'test', text: "residual p' = norm(max(0, p − q)) after every rejection at this point\n" +
        'uniform draw u = ' + f3(f.u) + " → inverse CDF of p' gives " + q(f.t) + " (p'(" + q(f.t) + ') = ' + f3(f.p) + ')' }));
    } else if (f.from === 'p') {
      d.append(pointBars(R, s, row, f.t));
      d.append(el('div', { class: 'test', text: 'uniform draw u = ' + f3(f.u) + ' → inverse CDF of p gives ' + q(f.t) + ' (p = ' + f3(f.p) + ')' }));
    } else if (f.from === 'argmax') {
      d.append(pointBars(R, s, row, f.t));
      d.append(el('div', { class: 'test', text: 'greedy: the argmax of p is ' + q(f.t) + ' (p = ' + f3(f.p) + ')' }));
    } else {
      d.append(pointBars(R, s, row, f.t));
      const t = el('table', { class: 'bars scores' }, el('tr', {}, el('td', { text: 'token' }), el('td', { text: 'logit/T' }), el('td', { text: 'Gumbel g' }),
        el('td', { text: 'score' }), el('td', { text: 'p' })));
      for (const e of f.scores) {
        t.append(el('tr', { class: e.t === f.t ? 'hl' : '' }, el('td', { class: 'tok', text: q(e.t) }), el('td', { text: f3(e.score - e.gumbel) }),
          el('td', { text: f3(e.gumbel) }), el('td', { text: f3(e.score) }), el('td', { text: f3(e.p) })));
      }
      d.append(el('div', { class: 'test', text: 'coupled sampling: the token is argmax of logit/T + g; ' + q(f.t) + ' scores ' + f3(f.score) }), t);
    }
    return d;
  }
  const n = +key, node = s.nodes[n];
  const t = findTest(s, n);
  d.append(el('div', { text: 'node ' + n + ' ' + q(node.t) + ' — depth ' + node.depth + ', position ' + (s.position + node.depth - 1) + ' — ' + statusWord[node.status] }));
  if (s.sources) {
    const src = s.sources.nodes[n];
    d.append(el('div', { class: 'help', text: 'Copied from ' + (src.position >= 0 ? 'position ' + src.position : 'an unknown position') +
      (src.origin === 'responses' ? ' of the response of request ' + src.request : ' of this sequence') + ', after a match of ' + src.match_length + ' token' + (src.match_length === 1 ? '' : 's') + '.' }));
  }
  d.append(pointBars(R, s, node.parent + 1, node.t, t ? { t: node.t, p: t.p, q: t.q } : null));
  if (t) {
    d.append(el('div', { class: 'test', text: testText(mode, t) }));
    d.append(el('div', { class: t.accepted ? 'verdict-accept' : 'verdict-reject', text: t.accepted ? '✓ accepted' : '✗ rejected' }));
  } else {
    d.append(el('div', { class: 'help', text: 'Never tested: the walk down the tree did not get here (its parent was rejected or a sibling was accepted first). ' +
      'The target still computed this distribution: the whole tree is verified in one forward.' }));
  }
  return d;
}

// The most instructive node of a step: the first rejected one, else the final token.
function defaultNode(s) {
  for (const pt of s.points) for (const t of pt.tests) if (!t.accepted) return String(t.node);
  return 'final';
}

const ms = ns => (ns / 1e6).toFixed(ns < 1e7 ? 2 : 1) + ' ms';

// What step `s` ran, in forwards, against sequential decoding's one target forward per token;
// all counts are the step's own record, and the times were measured around the step's drafting
// and target forward in this run on this machine.
function costStrip(R, s) {
  const kept = s.emitted.length, rows = s.target_rows, dfw = s.drafter_forwards;
  const box = el('div', { class: 'cost', 'data-drafter-forwards': dfw, 'data-target-rows': rows, 'data-tokens': kept,
    'data-sequential-forwards': kept, 'data-target-forwards': 1 });
  const blocks = (n, cls, label, cap) => {
    const b = el('span', { class: 'blocks' });
    for (let i = 0; i < Math.min(n, cap); ++i) b.append(el('span', { class: 'blk ' + cls, title: label, text: cls === 't' ? label : '' }));
    if (n > cap) b.append(el('span', { class: 'more', text: '+' + (n - cap) + ' more' }));
    return b;
  };
  const verify = s.sequential ? (s.index === 0 ? 'prefill over ' + plural(rows, 'prompt row') : '1 row') : 'verify over ' + plural(rows, 'row');
  if (s.sequential) {
    box.append(el('div', { class: 'row' }, el('span', { class: 'who', text: 'this step' }),
      el('span', { class: 'blocks' }, el('span', { class: 'blk t', text: verify }),
        el('span', { class: 'out', text: '1 target forward → ' + plural(kept, 'token') }))));
    box.append(el('div', { class: 'why', text: s.index === 0
      ? 'Every method starts so: one target forward over the prompt gives the first token; speculation starts from the next step.'
      : 'Sequential decoding: one target forward per token.' }));
  } else {
    const spec = el('span', { class: 'blocks' });
    if (dfw) spec.append(blocks(dfw, 'd', 'drafter forward', 24));
    spec.append(el('span', { class: 'blk t', title: 'one target forward', text: verify }),
      el('span', { class: 'out', text: (dfw ? plural(dfw, 'drafter forward') + ' + ' : '') + '1 target forward → ' + plural(kept, 'token') +
        (s.cut ? ' (of ' + s.produced + ', cut)' : '') }));
    box.append(el('div', { class: 'row' }, el('span', { class: 'who', text: 'this step' }), spec));
    const seq = el('span', { class: 'blocks' });
    seq.append(blocks(kept, 't1', 'one target forward over 1 row', 24),
      el('span', { class: 'out', text: plural(kept, 'target forward') + ' → ' + plural(kept, 'token') }));
    box.append(el('div', { class: 'row' }, el('span', { class: 'who', text: 'sequential' }), seq));
    box.append(el('div', { class: 'why', text: kept > 1
      ? 'The target ran once instead of ' + kept + ' times. Decoding a large model is bound by reading its weights once per forward, so a forward over ' +
        plural(rows, 'row') + ' costs about as much as over 1 while the rows stay below the hardware\'s ridge point (FLOPs per byte of bandwidth); ' +
        'the drafter is much smaller than the target.'
      : 'Only one token this step: no target forward saved' + (dfw ? ', and the drafting was extra work.' : '.') }));
  }
  const t = s.sequential ? 'target forward ' + ms(s.target_ns)
    : (dfw ? 'drafting ' + ms(s.draft_ns) + ', ' : '') + 'target forward and acceptance ' + ms(s.target_ns);
  box.append(el('div', { class: 'measured', text: 'Measured on this machine during this run: ' + t + '. The bundled models are tiny and run on the ' +
    'CPU, where a forward\'s time grows with its rows; `specdec simulate` predicts times for real model shapes and hardware.' }));
  box.append(el('div', { class: 'total', text: 'So far: ' + plural(s.total_tokens, 'token') + ' from ' + plural(s.total_target_forwards, 'target forward') +
    (s.total_drafter_forwards ? ' and ' + plural(s.total_drafter_forwards, 'drafter forward') : '') + '; sequential decoding: ' +
    plural(s.total_tokens, 'target forward') + '.' }));
  return box;
}

// The prompt (grey), then the tokens of steps 0..last (default: upto) on alternating backgrounds,
// step `upto` marked.
function textSoFar(R, upto, last) {
  const box = el('div', { class: 'text-box' }, el('span', { class: 'prompt', text: R.prompt.join('') }));
  for (let i = 0; i <= (last === undefined ? upto : last); ++i) {
    const st = R.steps[i];
    for (const t of st.emitted) box.append(el('span', { class: 'tok s' + (i % 2) + (i === upto ? ' current' : ''), title: 'step ' + st.index, text: t }));
  }
  return box;
}

// For the self-tests: where an element is on the screen.
function rect(e) { const r = e.getBoundingClientRect(); return { l: r.left, t: r.top, r: r.right, b: r.bottom }; }
// The tree box's visible rectangle and those of the accepted path's nodes.
function treeGeometry(view) {
  const nodes = {};
  for (const n of view.svg.querySelectorAll('.node')) nodes[n.getAttribute('data-node')] = rect(n.querySelector('rect'));
  return { panel: rect(view.svg), fitted: view.fitted, scale: view.view.k, nodes, path: pathKeys(view.s) };
}
// The probability bars of a detail: each bar's value and its width as a fraction of the axis,
// and each tick's label and position.
function barGeometry(box) {
  const axis = box.querySelector('.axis');
  if (!axis) return null;
  const a = axis.getBoundingClientRect();
  const bars = [...box.querySelectorAll('.track .bar')].filter(b => b.getAttribute('data-value') !== '')
    .map(b => [+b.getAttribute('data-value'), b.getBoundingClientRect().width / a.width]);
  const ticks = [...axis.querySelectorAll('.tick')].map(t => [t.textContent, (t.getBoundingClientRect().left - a.left) / a.width]);
  return { bars, ticks };
}
function layoutGeometry() {
  return { window_width: window.innerWidth, document_width: document.documentElement.scrollWidth };
}
)JS";

extern const char* const kExplainPageMain = R"JS(
// The explain page: one run, stepped through.
const S = D.steps;
let cur = 0, sel = 'root';
const tree = new TreeView(k => select(k));

function buildPage() {
  const facts = D.facts.slice();
  facts.push(['output', D.output_text + ' (' + plural(D.output_tokens, 'token') + ', stop: ' + D.stop_reason + ')']);
  const h = pageHeader('specdec explain — ' + D.title + (D.parallel_depth ? ' (parallel drafting)' : ''), facts);
  const c = el('div', { id: 'controls' },
    el('button', { id: 'first', title: 'first step (Home)', text: '|◀ first' }),
    el('button', { id: 'prev', title: 'previous step (←)', text: '◀ prev' }),
    el('button', { id: 'next', title: 'next step (→)', text: 'next ▶' }),
    el('button', { id: 'last', title: 'last step (End)', text: 'last ▶|' }),
    el('span', { id: 'step-title' }), el('span', { id: 'cut-note' }),
    el('span', { class: 'help', text: '← → steps · ↑ ↓ nodes · click a node' }));
  tree.element.id = 'tree-wrap';
  const left = el('div', {},
    el('section', { id: 'tree-panel' }, el('h2', { text: 'draft tree of this step' }), tree.element),
    el('section', { id: 'cost-panel' }, el('h2', { text: 'cost of this step' }), el('div', { id: 'cost' })),
    el('section', { id: 'parallel' }),
    el('section', { id: 'source' }),
    el('section', {}, el('h2', { text: 'text so far (tokens marked by step)' }), el('div', { id: 'text' })));
  const right = el('div', {},
    el('section', { id: 'detail-panel' }, el('h2', { text: 'selected node' }), el('div', { id: 'detail' })),
    el('section', {}, el('h2', { text: 'counters' }), el('div', { id: 'counters', class: 'counters' })));
  document.body.append(h, pageIntro(false), c, el('main', {}, left, right), el('pre', { id: 'selftest-result' }));
  document.getElementById('first').onclick = () => show(0);
  document.getElementById('prev').onclick = () => show(cur - 1);
  document.getElementById('next').onclick = () => show(cur + 1);
  document.getElementById('last').onclick = () => show(S.length - 1);
  document.addEventListener('keydown', e => {
    const k = e.key;
    if (k === 'ArrowRight' || k === 'n') show(cur + 1);
    else if (k === 'ArrowLeft' || k === 'p') show(cur - 1);
    else if (k === 'Home') show(0);
    else if (k === 'End') show(S.length - 1);
    else if (k === 'ArrowDown' || k === 'ArrowUp') {
      const order = nodeOrder(S[cur]);
      const i = order.indexOf(sel);
      select(order[(i + (k === 'ArrowDown' ? 1 : order.length - 1)) % order.length], true);
    } else return;
    e.preventDefault();
  });
}

function drawCounters(s) {
  const c = document.getElementById('counters');
  const tested = s.points.reduce((a, p) => a + p.tests.length, 0);
  const accepted = s.nodes.filter(n => n.status === 'accepted' || n.status === 'discarded').length;
  const al = s.full_steps ? (s.full_step_tokens / s.full_steps).toFixed(2) : '—';
  const rows = [
    ['this step: drafted', s.nodes.length], ['tested', tested], ['accepted', accepted],
    ['emitted', s.emitted.length + (s.cut ? ' of ' + s.produced + ' (cut)' : '')],
    ['drafter forwards', s.drafter_forwards], ['target forwards', 1],
    ['so far: tokens', s.total_tokens], ['target forwards', s.total_target_forwards],
    ['drafter forwards', s.total_drafter_forwards],
    ['AL (full steps)', al + (s.full_steps ? '  over ' + s.full_steps + ' step' + (s.full_steps === 1 ? '' : 's') : '')],
    ['tokens per target forward', (s.total_tokens / s.total_target_forwards).toFixed(2)]];
  c.replaceChildren(...rows.flatMap(([k, v]) => [el('span', { text: k }), el('b', { text: String(v) })]));
}

function drawParallel(s) {
  const p = document.getElementById('parallel');
  p.replaceChildren();
  if (!D.parallel_depth || s.sequential) { p.style.display = 'none'; return; }
  p.style.display = '';
  p.append(el('h2', { text: 'P-EAGLE: one drafter forward drafted every position' }));
  p.append(el('div', { class: 'help', text: 'Position 1 reads emb(' + q(s.pending) + ') with the target\'s hidden state; positions 2…' +
    D.parallel_depth + ' read the mask token with the learned mask_hidden. All attend causally to the context and to each other, so the whole draft costs ' +
    s.drafter_forwards + ' drafter forward' + (s.drafter_forwards === 1 ? '' : 's') + ' instead of one per depth.' }));
  const slots = el('div', { class: 'slots' });
  const maxDepth = Math.max(0, ...s.nodes.map(n => n.depth));
  for (let d = 1; d <= maxDepth; ++d) {
    const slot = el('div', { class: 'slot', 'data-position': d }, el('div', { text: 'position ' + d }),
      el('div', { class: 'in', text: d === 1 ? 'emb(' + q(s.pending) + ') + h' : 'mask + mask_hidden' }));
    s.nodes.forEach((n, i) => { if (n.depth === d) slot.append(el('span', { class: n.status, title: 'node ' + i, text: q(n.t) })); });
    slots.append(slot);
  }
  p.append(slots);
}

// Draft-free drafters (n-gram lookup, suffix decoding): the matched suffix, its earlier occurrence
// in the context with a few tokens around it (highlighted), or the earlier response it came from.
function drawSource(s) {
  const box = document.getElementById('source');
  box.replaceChildren();
  const d = s.sources;
  if (!D.draft_free || s.sequential) { box.style.display = 'none'; return; }
  box.style.display = '';
  box.append(el('h2', { text: 'where the drafts came from' }));
  if (!d) {
    box.append(el('div', { class: 'help', text: s.nodes.length ? 'No source recorded.' :
      'Nothing drafted: the sequence\'s last tokens occur nowhere earlier (or the speculation policy planned a plain step).' }));
    return;
  }
  const L = d.history;
  const span = (a, b) => a === b ? 'position ' + a : 'positions ' + a + '–' + b;
  const intro = el('div', {});
  if (d.match_length > 0) {
    intro.append('The last ' + d.match_length + ' token' + (d.match_length === 1 ? '' : 's') + ' ',
      el('span', { class: 'suffix', text: d.suffix.join('') }), ' (' + span(L - d.match_length, L - 1) + ')');
  } else {
    intro.append('No suffix matched');
  }
  if (d.origin === 'responses') {
    intro.append(' matched the response of request ' + d.request + '; the drafts copy it from its position ' + d.copied_from + '.');
    box.append(intro);
    return;
  }
  if (d.match_start === null) {
    intro.append('; the drafts copy from ' + (d.copied_from >= 0 ? 'position ' + d.copied_from : 'an unknown position') + '.');
    box.append(intro);
    return;
  }
  intro.append(' occurred earlier at ' + span(d.match_start, d.copied_from - 1) + '; the drafts copy what followed, from position ' + d.copied_from + '.');
  box.append(intro);
  const w = el('div', { class: 'window' });
  if (d.window.length && d.window[0].position > 0) w.append('…');
  for (const t of d.window) w.append(el('span', { class: t.role, title: 'position ' + t.position + ' (' + t.role + ')', text: t.t }));
  if (d.window.length && d.window[d.window.length - 1].position + 1 < L) w.append('…');
  box.append(w, el('div', { class: 'key' }, el('span', { class: 'suffix', text: 'yellow' }), ' the earlier occurrence of the matched tokens; ',
    el('span', { class: 'copied-key', text: 'green' }), ' copied as drafts'));
}

function select(key, reveal) {
  const s = S[cur];
  if (!nodeOrder(s).includes(key)) key = 'root';
  sel = key;
  tree.select(key, reveal);
  document.getElementById('detail').replaceChildren(nodeDetail(D, s, key));
}

function show(i, node) {
  cur = Math.max(0, Math.min(S.length - 1, i));
  const s = S[cur];
  document.getElementById('step-title').textContent = 'step ' + s.index + ' of ' + S[S.length - 1].index + ' — ' +
    (s.sequential ? (s.index === 0 ? 'prefill' : 'sequential token') : (s.chain ? 'chain' : 'tree') + ' of ' + s.nodes.length + ' drafts after ' + q(s.pending)) +
    ', position ' + s.position;
  document.getElementById('cut-note').textContent = s.cut ? 'cut by ' + (s.cut === 'eos' ? 'the end-of-sequence token' : '--max-new-tokens') +
    ': ' + s.emitted.length + ' of ' + s.produced + ' tokens kept, excluded from AL' : '';
  tree.draw(s);
  document.getElementById('cost').replaceChildren(costStrip(D, s));
  drawParallel(s);
  drawSource(s);
  document.getElementById('text').replaceChildren(textSoFar(D, cur));
  drawCounters(s);
  select(node !== undefined ? node : defaultNode(s));
}

function selfTest() {
  const r = { errors: pageErrors, resources: performance.getEntriesByType('resource').length,
    external: document.querySelectorAll('script[src], link, img[src], iframe, object, embed').length, steps: [], checks: {} };
  const classes = ['accepted', 'rejected', 'unreached', 'discarded', 'bonus', 'correction', 'target', 'root', 'cut'];
  r.header = document.querySelector('header').textContent;
  r.title = document.querySelector('header h1').textContent;
  const intro = document.getElementById('intro');
  r.intro = { text: intro.textContent, open: intro.open };
  for (let i = 0; i < S.length; ++i) {
    show(i);
    const c = { index: S[i].index, nodes: document.querySelectorAll('#tree-wrap .node').length };
    for (const k of classes) c[k] = document.querySelectorAll('#tree-wrap .node.' + k).length;
    c.parallel_slots = document.querySelectorAll('#parallel .slot').length;
    c.source_match = document.querySelectorAll('#source .window .match').length;
    c.source_copied = document.querySelectorAll('#source .window .copied').length;
    c.source_text = document.getElementById('source').style.display === 'none' ? '' : document.getElementById('source').textContent;
    c.text_tokens = document.querySelectorAll('#text .tok').length;
    c.tree = treeGeometry(tree);
    c.bars = barGeometry(document.getElementById('detail'));
    const cost = document.querySelector('#cost .cost');
    c.cost = { text: cost.textContent };
    for (const a of ['drafter-forwards', 'target-rows', 'tokens', 'sequential-forwards', 'target-forwards']) c.cost[a] = +cost.getAttribute('data-' + a);
    r.steps.push(c);
  }
  r.layout = layoutGeometry();
  r.panels = { tree: rect(document.getElementById('tree-panel')), detail: rect(document.getElementById('detail-panel')) };
  const snap = () => document.getElementById('step-title').textContent + '|' + document.querySelector('#tree-wrap .tree-box').innerHTML +
    '|' + document.getElementById('text').innerHTML + '|' + document.getElementById('counters').textContent;
  const key = k => document.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));
  show(0);
  const a = snap();
  key('ArrowRight');
  const b = snap();
  r.checks.key_forward = cur === Math.min(1, S.length - 1) && (S.length === 1 || b !== a);
  key('ArrowLeft');
  r.checks.key_back = cur === 0 && snap() === a;
  document.getElementById('next').click();
  r.checks.button_forward = cur === Math.min(1, S.length - 1) && (S.length === 1 || snap() === b);
  document.getElementById('prev').click();
  r.checks.button_back = cur === 0 && snap() === a;
  key('End');
  r.checks.end = cur === S.length - 1;
  // Selecting another node changes the detail panel.
  const before = document.getElementById('detail').textContent;
  key('ArrowDown');
  r.checks.node_keys = sel !== undefined && (nodeOrder(S[cur]).length < 2 || document.getElementById('detail').textContent !== before);
  const root = document.querySelector('#tree-wrap .node[data-node="root"]');
  root.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  r.checks.node_click = sel === 'root' && document.querySelector('#tree-wrap .node.selected') === root;
  // The largest step: "whole tree" fits every node into the panel; zoom buttons change the scale.
  let big = 0;
  S.forEach((s, i) => { if (s.nodes.length > S[big].nodes.length) big = i; });
  show(big);
  document.querySelector('#tree-wrap .fit-all').click();
  r.fit_all = treeGeometry(tree);
  const k0 = tree.view.k;
  document.querySelector('#tree-wrap .zoom-in').click();
  r.checks.zoom_in = tree.view.k > k0 || k0 >= 3;
  document.querySelector('#tree-wrap .fit-path').click();
  r.fit_path = treeGeometry(tree);
  r.errors = pageErrors.slice();
  document.getElementById('selftest-result').textContent = JSON.stringify(r);
}

buildPage();
{
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has('selftest')) selfTest();
  const step = h.has('step') ? S.findIndex(s => s.index === +h.get('step')) : 0;
  if (h.has('intro')) document.getElementById('intro').open = h.get('intro') !== '0';
  show(step < 0 ? 0 : step, h.has('node') ? h.get('node') : undefined);
}
)JS";

}  // namespace specdec::cli
