// The style and script of the `specdec compare --html` page on top of the shared ones
// (explain_page_assets.cpp): one column per method, each drawn with the explain page's pieces.
namespace specdec::cli {

extern const char* const kComparePageStyle = R"CSS(
.compare-top { padding: 10px 16px 0 16px; }
#agreement { font-weight: 700; padding: 6px 10px; border-radius: 4px; margin-bottom: 8px; }
#agreement.same { background: #e3f4e8; color: #1b5e20; } #agreement.differs { background: #fde2e1; color: #8e1c14; }
.summary-wrap { overflow-x: auto; }
#summary { border-collapse: collapse; font-size: 13px; background: #fff; }
#summary th, #summary td { border: 1px solid #d8dde3; padding: 3px 8px; text-align: right; }
#summary th:first-child, #summary td:first-child { text-align: left; font-family: monospace; }
#columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 12px; padding: 12px 16px; }
.method-col h2 { text-transform: none; font-family: monospace; font-size: 14px; color: #1d1d1f; }
.method-col h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #5b6770; margin: 10px 0 4px 0; }
.method-col dl.facts { font-size: 12px; margin-bottom: 6px; }
.method-col dl.facts dt { color: #5b6770; opacity: 1; }
.method-col .tree-box { max-height: 300px; }
.col-stats { font-weight: 600; font-size: 13px; }
.col-agree { font-size: 12px; margin-bottom: 6px; } .col-agree.same { color: #1b5e20; } .col-agree.differs { color: #b3261e; }
.col-agree.differs.exact { font-weight: 700; }
.steps-chart { display: flex; gap: 2px; align-items: flex-end; height: 64px; border-bottom: 1px solid #52606d; margin: 2px 0 6px 0; overflow: hidden; }
.step-bar { position: relative; flex: 1 1 0; min-width: 6px; max-width: 28px; height: 100%; padding: 0; border: none; background: none; cursor: pointer; display: flex; align-items: flex-end; }
.step-bar .fill { display: block; width: 100%; background: #66bb6a; border-radius: 2px 2px 0 0; }
.step-bar.seq .fill { background: #90a4ae; } .step-bar.cut .fill { background: repeating-linear-gradient(45deg, #66bb6a 0 3px, #c8ecd2 3px 6px); }
.step-bar.current .fill { outline: 2px solid #d86f00; }
.step-bar .n { position: absolute; top: 0; left: 0; right: 0; font-size: 10px; text-align: center; color: #3e4c59; }
.col-nav { display: flex; gap: 6px; align-items: center; margin: 4px 0; font-size: 13px; }
.col-nav .col-step { font-weight: 600; }
.col-node summary { cursor: pointer; font-size: 12px; color: #3e4c59; margin-top: 6px; }
)CSS";

extern const char* const kComparePageMain = R"JS(
// The compare page: one column per method on the same prompt, each drawn with the explain page's
// pieces (tree, cost strip, text marked by step).
const R = D.runs;

function column(run, i) {
  const col = el('section', { class: 'method-col', 'data-method': run.label, 'data-output': run.output_ids.join(' '), 'data-al': run.acceptance_length });
  // The method's own line (title and summary) as the heading's tooltip: the columns stay short.
  const method = run.facts.find(([k]) => k === 'method');
  col.append(el('h2', { text: run.label, title: method ? method[1] : run.label }), (() => { const dl = el('dl', { class: 'facts' });
    for (const [k, v] of run.facts) if (k !== 'method') dl.append(el('dt', { text: k }), el('dd', { text: v }));
    return dl; })());
  col.append(el('div', { class: 'col-stats', text: 'AL ' + run.acceptance_length.toFixed(2) + ' · ' + plural(run.output_ids.length, 'token') + ' in ' +
    plural(run.target_forwards, 'target forward') + (run.drafter_forwards ? ' + ' + plural(run.drafter_forwards, 'drafter forward') : '') }));
  col.append(el('div', { class: 'col-agree ' + (run.same_as_first ? 'same' : 'differs') + (D.exact_mode ? ' exact' : ''),
    text: i === 0 ? 'the reference for agreement' : run.same_as_first ? 'output: same as ' + R[0].label
      : D.exact_mode ? 'output DIFFERS from ' + R[0].label : 'output differs from ' + R[0].label + ' (plain sampling: other draws)' }));
  // Tokens per step (the accepted drafts plus the target's token), one bar each; a click opens the step.
  const most = Math.max(1, ...run.steps.map(s => s.produced));
  const chart = el('div', { class: 'steps-chart', title: 'tokens emitted per step' });
  run.steps.forEach((s, j) => {
    const b = el('button', { class: 'step-bar' + (s.cut ? ' cut' : '') + (s.sequential ? ' seq' : ''), 'data-step': s.index, 'data-tokens': s.emitted.length,
      title: 'step ' + s.index + ': ' + plural(s.emitted.length, 'token') + (s.cut ? ' (of ' + s.produced + ', cut)' : '') });
    b.append(el('span', { class: 'fill', style: `height:${(100 * s.emitted.length / most).toFixed(1)}%` }), el('span', { class: 'n', text: String(s.emitted.length) }));
    b.onclick = () => show(j);
    chart.append(b);
  });
  col.append(el('div', { class: 'help', text: 'tokens per step (click one to open it)' }), chart);
  const title = el('span', { class: 'col-step' });
  const prev = el('button', { text: '◀', title: 'previous step' }), next = el('button', { text: '▶', title: 'next step' });
  col.append(el('div', { class: 'col-nav' }, prev, next, title));
  const detail = el('div', { class: 'col-detail' });
  const view = new TreeView(k => { view.select(k); detail.replaceChildren(nodeDetail(run, run.steps[cur], k)); });
  const cost = el('div', { class: 'col-cost' });
  const text = el('div', { class: 'col-text' });
  col.append(view.element, el('h3', { text: 'cost of this step' }), cost, el('h3', { text: 'output, marked by step' }), text,
    el('details', { class: 'col-node' }, el('summary', { text: 'selected node: probabilities and test' }), detail));
  let cur = 0;
  function show(j) {
    cur = Math.max(0, Math.min(run.steps.length - 1, j));
    const s = run.steps[cur];
    title.textContent = 'step ' + s.index + ' of ' + run.steps[run.steps.length - 1].index + ': ' +
      (s.sequential ? (s.index === 0 ? 'prefill' : 'one target forward') : (s.nodes.length ? (s.chain ? 'chain' : 'tree') + ' of ' + plural(s.nodes.length, 'draft') : 'nothing drafted'));
    for (const b of chart.children) b.classList.toggle('current', +b.getAttribute('data-step') === s.index);
    view.draw(s);
    const k = defaultNode(s);
    view.select(k);
    detail.replaceChildren(nodeDetail(run, s, k));
    cost.replaceChildren(costStrip(run, s));
    text.replaceChildren(textSoFar(run, cur, run.steps.length - 1));
  }
  prev.onclick = () => show(cur - 1);
  next.onclick = () => show(cur + 1);
  col.show = show;
  col.view = view;
  col.run = run;
  return col;
}

function buildPage() {
  const facts = D.facts.slice();
  facts.unshift(['methods', R.map(r => r.label).join(' · ')]);
  facts.push(['outputs', D.all_agree ? 'all ' + R.length + ' agree token for token'
    : D.exact_mode ? 'DISAGREE: speculative decoding must reproduce sequential decoding here'
      : 'differ: plain sampling is lossless in distribution only']);
  document.body.append(pageHeader('specdec compare — ' + R.map(r => r.name).join(', '), facts), pageIntro(true));
  const table = el('table', { id: 'summary' }, el('tr', {}, ...['method', 'AL', 'tokens', 'target forwards', 'drafter forwards',
    'tokens per target forward', 'output'].map(t => el('th', { text: t }))));
  R.forEach((r, i) => table.append(el('tr', {}, el('td', { text: r.label }), el('td', { text: r.acceptance_length.toFixed(2) }),
    el('td', { text: String(r.output_ids.length) }), el('td', { text: String(r.target_forwards) }), el('td', { text: String(r.drafter_forwards) }),
    el('td', { text: (r.output_ids.length / r.target_forwards).toFixed(2) }),
    el('td', { text: i === 0 ? '(reference)' : r.same_as_first ? 'same' : D.exact_mode ? 'DIFFERS' : 'differs' }))));
  const banner = el('div', { id: 'agreement', class: D.all_agree ? 'same' : 'differs', text: D.all_agree
    ? 'All outputs agree token for token: every method emitted exactly the tokens of ' + R[0].label + '.'
    : 'The outputs differ' + (D.exact_mode ? ': under greedy and coupled sampling they must not.' : ' (plain sampling: lossless in distribution, not token for token).') });
  const cols = R.map(column);
  document.body.append(el('div', { class: 'compare-top' }, banner, el('div', { class: 'summary-wrap' }, table),
    el('div', { class: 'help', text: 'AL: tokens per speculative step as verified (a step cut by the token limit counts what it produced), as `specdec compare` reports it.' })),
    el('div', { id: 'columns' }, ...cols), el('pre', { id: 'selftest-result' }));
  for (const c of cols) c.show(c.run.steps.length > 1 ? 1 : 0);
  return cols;
}

function selfTest(cols) {
  const r = { errors: pageErrors, resources: performance.getEntriesByType('resource').length,
    external: document.querySelectorAll('script[src], link, img[src], iframe, object, embed').length };
  r.header = document.querySelector('header').textContent;
  r.intro = document.getElementById('intro').textContent;
  r.agreement = document.getElementById('agreement').textContent;
  r.layout = layoutGeometry();
  r.columns = cols.map(c => ({
    method: c.getAttribute('data-method'), output_ids: c.getAttribute('data-output'), al: +c.getAttribute('data-al'),
    output_text: [...c.querySelectorAll('.col-text .tok')].map(t => t.textContent).join(''),
    step_tokens: [...c.querySelectorAll('.step-bar')].map(b => +b.getAttribute('data-tokens')),
    trees: c.run.steps.map((s, j) => { c.show(j); return treeGeometry(c.view); }),
    cost: c.run.steps.map((s, j) => { c.show(j); const e = c.querySelector('.col-cost .cost');
      return { 'drafter-forwards': +e.getAttribute('data-drafter-forwards'), 'target-rows': +e.getAttribute('data-target-rows'), tokens: +e.getAttribute('data-tokens') }; }),
    rect: rect(c) }));
  // A click on a step's bar opens that step; the arrows move from it.
  r.checks = {};
  const c0 = cols[cols.length - 1], bars = c0.querySelectorAll('.step-bar'), last = bars[bars.length - 1];
  const title = () => c0.querySelector('.col-step').textContent;
  last.click();
  r.checks.bar_click = title().startsWith('step ' + last.getAttribute('data-step') + ' ') && last.classList.contains('current');
  c0.querySelector('.col-nav button').click();
  r.checks.prev_button = bars.length < 2 || title().startsWith('step ' + bars[bars.length - 2].getAttribute('data-step') + ' ');
  for (const c of cols) c.show(c.run.steps.length > 1 ? 1 : 0);
  r.errors = pageErrors.slice();
  document.getElementById('selftest-result').textContent = JSON.stringify(r);
}

{
  const cols = buildPage();
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has('intro')) document.getElementById('intro').open = h.get('intro') !== '0';
  if (h.has('step')) for (const c of cols) { const j = c.run.steps.findIndex(s => s.index === +h.get('step')); if (j >= 0) c.show(j); }
  if (h.has('selftest')) selfTest(cols);
}
)JS";

}  // namespace specdec::cli
