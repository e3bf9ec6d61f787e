// The style and script of the `specdec explain --html` page (explain_html.cpp writes the page and
// its data). Everything is inline: the page loads nothing from anywhere.
namespace specdec::cli {

extern const char* const kExplainPageStyle = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { padding: 10px 16px; background: #22313f; color: #fff; }
header h1 { font-size: 17px; margin: 0 0 2px 0; }
header .sub { font-size: 12px; opacity: .85; font-family: monospace; }
#controls { padding: 8px 16px; display: flex; gap: 8px; align-items: center; background: #e9edf1; flex-wrap: wrap; }
#controls button { font-size: 14px; padding: 3px 10px; }
#step-title { font-weight: 600; margin-left: 8px; }
#cut-note { color: #b3261e; font-weight: 600; }
main { display: grid; grid-template-columns: minmax(420px, 1.25fr) minmax(380px, 1fr); gap: 12px; padding: 12px 16px; }
section { background: #fff; border: 1px solid #d8dde3; border-radius: 6px; padding: 8px 10px; }
section h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #5b6770; margin: 0 0 6px 0; }
#tree-wrap { overflow: auto; max-height: 460px; }
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
table.bars { border-collapse: collapse; width: 100%; font-size: 12px; }
table.bars td { padding: 1px 4px; white-space: nowrap; }
table.bars td.tok { font-family: monospace; text-align: right; width: 4em; }
table.bars tr.hl td { background: #fff4c2; }
.bar { height: 9px; display: block; margin: 1px 0; min-width: 1px; }
.bar.p { background: #2962ff; } .bar.q { background: #ff8f00; } .bar.r { background: #8e24aa; }
.key { font-size: 12px; margin: 2px 0 6px 0; }
.key i { display: inline-block; width: 18px; height: 8px; margin: 0 3px 0 8px; }
.test { font-family: monospace; font-size: 13px; background: #f4f6f8; padding: 6px 8px; border-radius: 4px; white-space: pre-wrap; }
.verdict-accept { color: #1b7f3b; font-weight: 700; } .verdict-reject { color: #b3261e; font-weight: 700; }
#text { font-family: monospace; font-size: 14px; line-height: 1.9; word-break: break-all; }
#text .prompt { color: #7b8794; }
#text .tok { padding: 1px 0; border-bottom: 3px solid transparent; }
#text .s0 { background: #e3f2fd; } #text .s1 { background: #e8f5e9; }
#text .current { border-bottom-color: #d86f00; font-weight: 700; }
.counters { display: grid; grid-template-columns: auto auto; gap: 1px 14px; font-size: 13px; }
.counters b { font-variant-numeric: tabular-nums; }
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

extern const char* const kExplainPageScript = R"JS(
'use strict';
const pageErrors = [];
window.addEventListener('error', e => pageErrors.push(String(e.message || e)));
{
  const original = console.error.bind(console);
  console.error = (...a) => { pageErrors.push(a.map(String).join(' ')); original(...a); };
}
const D = JSON.parse(document.getElementById('run-data').textContent);
const S = D.steps;
const mode = D.sampling.mode;
let cur = 0, sel = 'root';

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
const statusWord = { accepted: 'accepted', rejected: 'rejected', unreached: 'not reached (never tested)',
  discarded: 'accepted, then discarded: the step was cut', bonus: 'bonus', correction: 'correction', target: "the target's token" };

function buildPage() {
  const h = el('header', {}, el('h1', { text: 'specdec explain — ' + D.method + (D.parallel_depth ? ' (parallel drafting)' : '') }),
    el('div', { class: 'sub', text: D.method_json + '  ' + D.sampling_text }),
    el('div', { class: 'sub', text: 'prompt ' + D.prompt_text }));
  const c = el('div', { id: 'controls' },
    el('button', { id: 'first', title: 'first step (Home)', text: '|◀ first' }),
    el('button', { id: 'prev', title: 'previous step (←)', text: '◀ prev' }),
    el('button', { id: 'next', title: 'next step (→)', text: 'next ▶' }),
    el('button', { id: 'last', title: 'last step (End)', text: 'last ▶|' }),
    el('span', { id: 'step-title' }), el('span', { id: 'cut-note' }),
    el('span', { class: 'help', text: '← → steps · ↑ ↓ nodes · click a node' }));
  const legend = el('div', { class: 'legend' });
  for (const k of ['accepted', 'rejected', 'unreached', 'discarded', 'bonus', 'correction', 'target'])
    legend.append(el('span', { class: k, text: k === 'unreached' ? 'not reached' : k === 'discarded' ? 'accepted, cut' : k }));
  const left = el('div', {},
    el('section', {}, el('h2', { text: 'draft tree of this step' }), el('div', { id: 'tree-wrap' }), legend),
    el('section', { id: 'parallel' }),
    el('section', { id: 'source' }),
    el('section', {}, el('h2', { text: 'text so far (tokens marked by step)' }), el('div', { id: 'text' })));
  const right = el('div', {},
    el('section', {}, el('h2', { text: 'selected node' }), el('div', { id: 'detail' })),
    el('section', {}, el('h2', { text: 'counters' }), el('div', { id: 'counters', class: 'counters' })));
  document.body.append(h, c, el('main', {}, left, right), el('pre', { id: 'selftest-result' }));
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
      select(order[(i + (k === 'ArrowDown' ? 1 : order.length - 1)) % order.length]);
    } else return;
    e.preventDefault();
  });
}

function nodeOrder(s) { return ['root', ...s.nodes.map((_, i) => String(i)), 'final']; }
function finalStatus(s) { return s.final.kind; }
function children(s, p) { const c = []; s.nodes.forEach((n, i) => { if (n.parent === p) c.push(i); }); return c; }

function drawTree(s) {
  const W = 92, H = 34;
  const pos = {};
  let slot = 0;
  const width = t => Math.max(34, 16 + 8.2 * [...t].length);
  function place(key, depth, kids) {
    let ys = kids.map(k => k());
    const y = ys.length ? (ys[0] + ys[ys.length - 1]) / 2 : (slot++) * H;
    pos[key] = { x: 12 + depth * W, y };
    return y;
  }
  function visit(p, depth) {
    const kids = children(s, p).map(c => () => visit(c, depth + 1));
    if (s.final.point === p) kids.push(() => place('final', depth + 1, []));
    return place(p < 0 ? 'root' : String(p), depth, kids);
  }
  visit(-1, 0);
  const maxX = Math.max(...Object.values(pos).map(v => v.x)) + 130;
  const svg = svgEl('svg', { id: 'tree', width: maxX, height: slot * H + 16, role: 'img' });
  const g = svgEl('g', { transform: 'translate(0,8)' });
  svg.append(g);
  const labelOf = key => key === 'root' ? (s.sequential ? (s.index === 0 ? 'prompt' : 'context') : q(s.pending))
    : key === 'final' ? '+' + q(s.final.t) : q(s.nodes[+key].t);
  const classOf = key => key === 'root' ? 'root' : key === 'final' ? finalStatus(s) + (s.final.kept ? '' : ' cut')
    : s.nodes[+key].status;
  const parentOf = key => key === 'root' ? null : key === 'final' ? (s.final.point < 0 ? 'root' : String(s.final.point))
    : (s.nodes[+key].parent < 0 ? 'root' : String(s.nodes[+key].parent));
  const keys = Object.keys(pos);
  for (const k of keys) {
    const p = parentOf(k);
    if (p === null) continue;
    const a = pos[p], b = pos[k];
    g.append(svgEl('line', { x1: a.x + width(labelOf(p)), y1: a.y + 13, x2: b.x, y2: b.y + 13, class: classOf(k).split(' ')[0] }));
  }
  for (const k of keys) {
    const t = labelOf(k);
    const node = svgEl('g', { class: 'node ' + classOf(k), 'data-node': k, transform: `translate(${pos[k].x},${pos[k].y})` });
    node.append(svgEl('rect', { width: width(t), height: 26, rx: 5 }));
    const text = svgEl('text', { x: 8, y: 17 });
    text.textContent = t;
    node.append(text);
    const tip = svgEl('title');
    tip.textContent = k === 'root' ? 'root' : k === 'final' ? s.final.kind : 'node ' + k + ': ' + statusWord[s.nodes[+k].status];
    node.append(tip);
    node.addEventListener('click', () => select(k));
    g.append(node);
  }
  const wrap = document.getElementById('tree-wrap');
  wrap.replaceChildren(svg);
}

function bars(rows, series, highlight) {
  // rows: [{t, values: {key: number|null}}]; series: [{key, name, cls}]
  const max = Math.max(1e-9, ...rows.flatMap(r => series.map(s => r.values[s.key] || 0)));
  const key = el('div', { class: 'key' });
  for (const s of series) key.append(el('i', { class: 'bar ' + s.cls }), s.name);
  const table = el('table', { class: 'bars' });
  for (const r of rows) {
    const tr = el('tr', { class: r.t === highlight ? 'hl' : '' }, el('td', { class: 'tok', text: q(r.t) }));
    const cell = el('td', { style: 'width:100%' });
    const nums = el('td');
    for (const s of series) {
      const v = r.values[s.key];
      cell.append(el('span', { class: 'bar ' + s.cls, style: `width:${v ? (100 * v / max).toFixed(1) : 0}%` }));
      nums.append(el('div', { text: s.name.split(' ')[0] + ' ' + (v === null || v === undefined ? '—' : f3(v)) }));
    }
    tr.append(cell, nums);
    table.append(tr);
  }
  return el('div', {}, key, table);
}

function pointBars(s, row, highlight, extra) {
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

function testText(t) {
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

function detail(s, key) {
  const d = document.getElementById('detail');
  d.replaceChildren();
  if (key === 'root') {
    d.append(el('div', { text: s.sequential ? 'The target reads the context and predicts the next token.'
      : 'Root: the pending token ' + q(s.pending) + ' (the last token emitted), position ' + (s.position - 1) +
        '. The target\'s distribution after it judges the depth-1 drafts.' }));
    d.append(pointBars(s, 0, s.sequential ? s.final.t : null));
    return;
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
      d.append(pointBars(s, row, f.t));
      d.append(el('div', { class: 'test', text: 'uniform draw u = ' + f3(f.u) + ' → inverse CDF of p gives ' + q(f.t) + ' (p = ' + f3(f.p) + ')' }));
    } else if (f.from === 'argmax') {
      d.append(pointBars(s, row, f.t));
      d.append(el('div', { class: 'test', text: 'greedy: the argmax of p is ' + q(f.t) + ' (p = ' + f3(f.p) + ')' }));
    } else {
      d.append(pointBars(s, row, f.t));
      const t = el('table', { class: 'bars' }, el('tr', {}, el('td', { text: 'token' }), el('td', { text: 'logit/T' }), el('td', { text: 'Gumbel g' }),
        el('td', { text: 'score' }), el('td', { text: 'p' })));
      for (const e of f.scores) {
        t.append(el('tr', { class: e.t === f.t ? 'hl' : '' }, el('td', { class: 'tok', text: q(e.t) }), el('td', { text: f3(e.score - e.gumbel) }),
          el('td', { text: f3(e.gumbel) }), el('td', { text: f3(e.score) }), el('td', { text: f3(e.p) })));
      }
      d.append(el('div', { class: 'test', text: 'coupled sampling: the token is argmax of logit/T + g; ' + q(f.t) + ' scores ' + f3(f.score) }), t);
    }
    return;
  }
  const n = +key, node = s.nodes[n];
  const t = findTest(s, n);
  d.append(el('div', { text: 'node ' + n + ' ' + q(node.t) + ' — depth ' + node.depth + ', position ' + (s.position + node.depth - 1) + ' — ' + statusWord[node.status] }));
  if (s.sources) {
    const src = s.sources.nodes[n];
    d.append(el('div', { class: 'help', text: 'Copied from ' + (src.position >= 0 ? 'position ' + src.position : 'an unknown position') +
      (src.origin === 'responses' ? ' of the response of request ' + src.request : ' of this sequence') + ', after a match of ' + src.match_length + ' token' + (src.match_length === 1 ? '' : 's') + '.' }));
  }
  d.append(pointBars(s, node.parent + 1, node.t, t ? { t: node.t, p: t.p, q: t.q } : null));
  if (t) {
    d.append(el('div', { class: 'test', text: testText(t) }));
    d.append(el('div', { class: t.accepted ? 'verdict-accept' : 'verdict-reject', text: t.accepted ? '✓ accepted' : '✗ rejected' }));
  } else {
    d.append(el('div', { class: 'help', text: 'Never tested: the walk down the tree did not get here (its parent was rejected or a sibling was accepted first). ' +
      'The target still computed this distribution: the whole tree is verified in one forward.' }));
  }
}

function drawText(s) {
  const box = document.getElementById('text');
  box.replaceChildren(el('span', { class: 'prompt', text: D.prompt.join('') }));
  for (let i = 0; i <= cur; ++i) {
    const st = S[i];
    st.emitted.forEach((t, j) => {
      box.append(el('span', { class: 'tok s' + (i % 2) + (i === cur ? ' current' : ''), title: 'step ' + st.index, text: t }));
    });
  }
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

function select(key) {
  const s = S[cur];
  if (!nodeOrder(s).includes(key)) key = 'root';
  sel = key;
  for (const n of document.querySelectorAll('#tree .node')) n.classList.toggle('selected', n.getAttribute('data-node') === key);
  detail(s, key);
}

function defaultNode(s) {
  // The most instructive node: the first rejected one, else the last tested one, else the final token.
  for (const pt of s.points) for (const t of pt.tests) if (!t.accepted) return String(t.node);
  return 'final';
}

function show(i, node) {
  cur = Math.max(0, Math.min(S.length - 1, i));
  const s = S[cur];
  document.getElementById('step-title').textContent = 'step ' + s.index + ' of ' + S[S.length - 1].index + ' — ' +
    (s.sequential ? (s.index === 0 ? 'prefill' : 'sequential token') : (s.chain ? 'chain' : 'tree') + ' of ' + s.nodes.length + ' drafts after ' + q(s.pending)) +
    ', position ' + s.position;
  document.getElementById('cut-note').textContent = s.cut ? 'cut by ' + (s.cut === 'eos' ? 'the end-of-sequence token' : '--max-new-tokens') +
    ': ' + s.emitted.length + ' of ' + s.produced + ' tokens kept, excluded from AL' : '';
  drawTree(s);
  drawParallel(s);
  drawSource(s);
  drawText(s);
  drawCounters(s);
  select(node !== undefined ? node : defaultNode(s));
}

function selfTest() {
  const r = { errors: pageErrors, resources: performance.getEntriesByType('resource').length,
    external: document.querySelectorAll('script[src], link, img[src], iframe, object, embed').length, steps: [], checks: {} };
  const classes = ['accepted', 'rejected', 'unreached', 'discarded', 'bonus', 'correction', 'target', 'root', 'cut'];
  for (let i = 0; i < S.length; ++i) {
    show(i);
    const c = { index: S[i].index, nodes: document.querySelectorAll('#tree .node').length };
    for (const k of classes) c[k] = document.querySelectorAll('#tree .node.' + k).length;
    c.parallel_slots = document.querySelectorAll('#parallel .slot').length;
    c.source_match = document.querySelectorAll('#source .window .match').length;
    c.source_copied = document.querySelectorAll('#source .window .copied').length;
    c.source_text = document.getElementById('source').style.display === 'none' ? '' : document.getElementById('source').textContent;
    c.text_tokens = document.querySelectorAll('#text .tok').length;
    r.steps.push(c);
  }
  const snap = () => document.getElementById('step-title').textContent + '|' + document.getElementById('tree-wrap').innerHTML +
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
  const last = document.querySelector('#tree .node[data-node="root"]');
  last.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  r.checks.node_click = sel === 'root' && document.querySelector('#tree .node.selected') === last;
  r.errors = pageErrors.slice();
  document.getElementById('selftest-result').textContent = JSON.stringify(r);
}

buildPage();
{
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has('selftest')) selfTest();
  const step = h.has('step') ? S.findIndex(s => s.index === +h.get('step')) : 0;
  show(step < 0 ? 0 : step, h.has('node') ? h.get('node') : undefined);
}
)JS";

}  // namespace specdec::cli
