"""The page served at GET /: paste text, click, see the entities highlighted by label with their scores.

Self-contained on purpose (no CDN, no external fonts or scripts): it works offline and leaks nothing.
It lives in a Python module rather than a static file so a plain `pip install .` (the Docker images)
ships it without package-data configuration.
"""

PAGE_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nerservice — entity extraction</title>
<!-- No CDN, no external fonts or scripts. -->
<style>
  :root { --fg: #1d232a; --muted: #5b6672; --line: #d8dee4; --bg: #f7f9fb; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
  main { max-width: 60rem; margin: 0 auto; padding: 1.5rem; }
  h1 { font-size: 1.3rem; margin: 0 0 .25rem; }
  p.sub { margin: 0 0 1rem; color: var(--muted); }
  textarea { width: 100%; min-height: 9rem; padding: .6rem; font: inherit; border: 1px solid var(--line); border-radius: 6px; resize: vertical; }
  .bar { display: flex; gap: .75rem; align-items: center; margin: .6rem 0 1rem; flex-wrap: wrap; }
  button { font: inherit; padding: .45rem 1.1rem; border: 0; border-radius: 6px; background: #1f6feb; color: #fff; cursor: pointer; }
  button:disabled { background: #8aa9d6; cursor: wait; }
  #status { color: var(--muted); font-size: .9rem; }
  #status.error { color: #b42318; }
  #output { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .9rem; white-space: pre-wrap; min-height: 3rem; line-height: 2; }
  mark.ent { border-radius: 4px; padding: .1rem .25rem; color: inherit; }
  mark.ent .tag { font-size: .68rem; font-weight: 600; margin-left: .3rem; padding: 0 .25rem; border-radius: 3px; background: rgba(0,0,0,.12); vertical-align: middle; }
  #legend { display: flex; gap: .5rem; flex-wrap: wrap; margin: .8rem 0; }
  #legend span { padding: .05rem .5rem; border-radius: 4px; font-size: .85rem; }
  table { border-collapse: collapse; width: 100%; margin-top: .6rem; font-size: .9rem; background: #fff; }
  th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); }
  td.num { font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<main>
  <h1>nerservice</h1>
  <p class="sub" id="model">Paste a text, then extract its entities.</p>
  <label for="text" class="sub">Text</label>
  <textarea id="text" spellcheck="false" placeholder="e.g. Mutations in the BRCA1 gene cause hereditary breast cancer."></textarea>
  <div class="bar">
    <button id="extract" type="button">Extract entities</button>
    <span id="status" role="status"></span>
  </div>
  <div id="legend"></div>
  <div id="output" aria-live="polite"></div>
  <table id="entities" hidden>
    <thead><tr><th>Entity</th><th>Label</th><th>Score</th><th>Offsets</th></tr></thead>
    <tbody></tbody>
  </table>
</main>
<script>
"use strict";
// Offsets from the API count Unicode code points; JS strings count UTF-16 units, so slice code points.
const PALETTE = ["#ffd8a8", "#b2f2bb", "#a5d8ff", "#fcc2d7", "#d0bfff", "#ffec99", "#99e9f2", "#ffc9c9"];
const colors = new Map();
function colorOf(label) {
  if (!colors.has(label)) colors.set(label, PALETTE[colors.size % PALETTE.length]);
  return colors.get(label);
}
const $ = (id) => document.getElementById(id);

function render(text, entities) {
  const cps = Array.from(text);
  const out = $("output"), body = document.querySelector("#entities tbody"), legend = $("legend");
  out.replaceChildren(); body.replaceChildren(); legend.replaceChildren();
  let pos = 0;
  for (const e of [...entities].sort((a, b) => a.start - b.start)) {
    if (e.start < pos) continue;  // never overlap (the API does not produce overlaps)
    out.append(document.createTextNode(cps.slice(pos, e.start).join("")));
    const mark = document.createElement("mark");
    mark.className = "ent";
    mark.dataset.label = e.label;
    mark.dataset.score = String(e.score);
    mark.style.background = colorOf(e.label);
    mark.title = `${e.label} · score ${e.score.toFixed(3)}`;
    mark.append(document.createTextNode(cps.slice(e.start, e.end).join("")));
    const tag = document.createElement("span");
    tag.className = "tag";
    tag.textContent = `${e.label} ${e.score.toFixed(2)}`;
    mark.append(tag);
    out.append(mark);
    pos = e.end;
    const row = body.insertRow();
    for (const [value, cls] of [[e.text, ""], [e.label, ""], [e.score.toFixed(3), "num"], [`${e.start}–${e.end}`, "num"]]) {
      const cell = row.insertCell();
      cell.textContent = value;
      if (cls) cell.className = cls;
    }
  }
  out.append(document.createTextNode(cps.slice(pos).join("")));
  $("entities").hidden = entities.length === 0;
  for (const [label, color] of colors) {
    const chip = document.createElement("span");
    chip.textContent = label;
    chip.style.background = color;
    legend.append(chip);
  }
}

async function extract() {
  const text = $("text").value, status = $("status"), button = $("extract");
  status.className = ""; status.textContent = "Extracting…"; button.disabled = true;
  try {
    const res = await fetch("/v1/extract", {method: "POST", headers: {"Content-Type": "application/json"},
                                            body: JSON.stringify({texts: [text]})});
    const data = await res.json();
    if (!res.ok) throw new Error(data.error ? `${data.error.code}: ${data.error.message}` : `HTTP ${res.status}`);
    const entities = data.results[0].entities;
    render(text, entities);
    $("model").textContent = `Model ${data.model.name} · version ${data.model.version}`;
    status.textContent = `${entities.length} entit${entities.length === 1 ? "y" : "ies"} · ` +
      `${data.timing.total_ms.toFixed(1)} ms (inference ${data.timing.inference_ms.toFixed(1)} ms)`;
  } catch (err) {
    status.className = "error"; status.textContent = String(err.message || err);
  } finally {
    button.disabled = false;
  }
}
$("extract").addEventListener("click", extract);
$("text").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) extract(); });
</script>
</body>
</html>
"""
