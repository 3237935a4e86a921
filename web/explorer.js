// The run explorer's page script: filters, sorts and pages the answers of one run (dualjudge view).
// The state of the filters is the URL fragment, so a link can open the explorer on the rows behind a number.
"use strict";
(function () {
  const errors = document.getElementById("errors");
  window.addEventListener("error", (e) => {
    const li = document.createElement("li");
    li.textContent = "error: " + e.message;
    errors.appendChild(li);
  });

  const data = JSON.parse(document.getElementById("data").textContent);
  const form = document.getElementById("filters");
  const list = document.getElementById("answers");
  const count = document.getElementById("count");
  const more = document.getElementById("more");
  const PAGE = 50;
  const FIELDS = ["variant", "judge", "jfamily", "model", "sfamily", "strategy", "visibility", "mode", "sign", "type",
                  "own", "agrees", "failures", "disagree", "sort"];
  // a task other than uk-signs: its words on the page, and a filter for each metadata column of its items
  const task = data.task || null;
  const LABEL = task ? task.label : "SIGN_TYPE";
  const META = task ? task.meta : [];
  if (task) {
    form.elements.sign.parentNode.firstChild.textContent = task.unit + " ";
    const before = form.elements.type.parentNode;
    for (const name of META) {
      const label = document.createElement("label");
      label.append(name + " ", Object.assign(document.createElement("select"), { name: "m_" + name }));
      form.insertBefore(label, before);
      FIELDS.push("m_" + name);
    }
  }
  // occluded variants (uk-signs, an image task) have visibility and mode filters; items that are their one variant
  // (a text task) have none, and their cards say nothing of either
  const OCCLUDED = new Set(data.answers.map((a) => `${a.visibility} ${a.mode}`)).size > 1;
  if (!OCCLUDED) {
    for (const name of ["visibility", "mode"]) {
      form.elements[name].parentNode.remove();
      FIELDS.splice(FIELDS.indexOf(name), 1);
    }
  }
  const judgeFamily = Object.fromEntries(data.judges.map((j) => [j.name, j.family]));
  const FAILED = new Set(["parse_failure", "error"]);
  let shown = PAGE;

  function uniq(values) {
    return Array.from(new Set(values.filter((v) => v !== null && v !== undefined).map(String))).sort();
  }

  function fillSelect(name, values, anyLabel) {
    const select = form.elements[name];
    const options = anyLabel === null ? [] : [["", anyLabel]];
    for (const v of values) options.push([v, v]);
    select.replaceChildren(...options.map(([value, label]) => new Option(label, value)));
  }

  fillSelect("variant", data.variants, null);
  // the judge filter names each judge's self-preference from the run's analysis (index; agreement held fixed)
  form.elements.judge.replaceChildren(new Option("any", ""), ...data.judges.map((j) =>
    new Option(j.self_preference ? `${j.name} (${j.self_preference})` : j.name, j.name)));
  fillSelect("jfamily", uniq(data.judges.map((j) => j.family)), "any");
  // the system model filter lists the models best first by calibrated score (the report's leaderboard) when
  // the judge variant has one, with the score beside each name
  function fillModels(variant) {
    const select = form.elements.model;
    const current = select.value;
    const cal = (data.systems[variant] || {}).model || {};
    const models = uniq(data.answers.map((a) => a.model));
    const known = models.filter((m) => cal[m] !== undefined).sort((x, y) => cal[y] - cal[x] || (x < y ? -1 : 1));
    const rest = models.filter((m) => cal[m] === undefined);
    const options = [["", "any"], ...known.map((m) => [m, `${m} (calibrated ${cal[m].toFixed(2)})`]), ...rest.map((m) => [m, m])];
    select.replaceChildren(...options.map(([value, label]) => new Option(label, value)));
    select.value = current;
  }
  fillModels(data.variants[0]);
  fillSelect("sfamily", uniq(data.answers.map((a) => a.family)), "any");
  fillSelect("strategy", uniq(data.answers.map((a) => a.strategy)), "any");
  if (OCCLUDED) {
    fillSelect("visibility", uniq(data.answers.map((a) => a.visibility)).sort((x, y) => Number(y) - Number(x)), "any");
    fillSelect("mode", uniq(data.answers.map((a) => a.mode)), "any");
  }
  fillSelect("sign", uniq(data.answers.map((a) => a.sign)), "any");
  for (const name of META) fillSelect("m_" + name, uniq(data.answers.map((a) => (a.meta || {})[name])), "any");

  function readHash() {
    const state = {};
    for (const part of location.hash.replace(/^#/, "").split("&")) {
      if (!part) continue;
      const [k, v = ""] = part.split("=");
      try {
        state[decodeURIComponent(k)] = decodeURIComponent(v);
      } catch (e) {
        // a malformed escape (a link cut mid-character): that filter is left unset, the page shows everything else
      }
    }
    return state;
  }

  function setControls(state) {
    limit = state.limit || "";
    fillModels(state.variant || data.variants[0]);
    for (const name of FIELDS) {
      const el = form.elements[name];
      if (!el) continue;
      if (el.type === "checkbox") el.checked = state[name] === "1";
      else el.value = state[name] !== undefined ? state[name] : (name === "variant" ? data.variants[0] : "");
    }
  }

  let limit = "";  // page size from the fragment ("all" shows every match); no control of its own

  function readControls() {
    const state = limit ? { limit } : {};
    for (const name of FIELDS) {
      const el = form.elements[name];
      if (!el) continue;
      const value = el.type === "checkbox" ? (el.checked ? "1" : "") : el.value;
      if (value !== "" && !(name === "variant" && value === data.variants[0])) state[name] = value;
    }
    return state;
  }

  function writeHash(state) {
    const parts = Object.entries(state).map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v));
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname);
  }

  // every verdict carries each declared judge kind (data.kinds) under v.k; the dual-judge checks read two of them
  const kindOk = (v, name, field) => v.k[name] !== undefined && v.k[name].s === "ok" && v.k[name][field] !== null;
  const ok = (v) => kindOk(v, "quality", "overall");
  const overall = (v) => v.k.quality.overall;
  const both = (v) => ok(v) && kindOk(v, "equivalence", "equivalent");
  const isType2 = (v) => both(v) && overall(v) > data.good && !v.k.equivalence.equivalent;
  const isType1 = (v) => both(v) && overall(v) < data.poor && v.k.equivalence.equivalent;
  const failed = (v) => data.kinds.some((kind) => v.k[kind.name] !== undefined && FAILED.has(v.k[kind.name].s));

  function spread(verdicts) {
    const scores = verdicts.filter(ok).map(overall);
    return scores.length >= 2 ? Math.max(...scores) - Math.min(...scores) : null;
  }

  function select(state) {
    const variant = state.variant || data.variants[0];
    const threshold = state.disagree !== undefined && state.disagree !== "" ? Number(state.disagree) : null;
    const verdictFilters = state.type || state.own || state.agrees || state.failures;
    const out = [];
    for (const a of data.answers) {
      if (state.model && a.model !== state.model) continue;
      if (state.sfamily && a.family !== state.sfamily) continue;
      if (state.strategy && a.strategy !== state.strategy) continue;
      if (state.visibility && String(a.visibility) !== state.visibility) continue;
      if (state.mode && a.mode !== state.mode) continue;
      if (META.some((name) => state["m_" + name] && (a.meta || {})[name] !== state["m_" + name])) continue;
      if (state.sign && a.sign !== state.sign) continue;
      const all = a.verdicts.filter((v) => v.jv === variant);
      let relevant = all;
      if (state.judge) relevant = relevant.filter((v) => data.judges[v.judge].name === state.judge);
      if (state.jfamily) relevant = relevant.filter((v) => data.judges[v.judge].family === state.jfamily);
      if ((state.judge || state.jfamily) && relevant.length === 0) continue;
      if (verdictFilters) {
        const answerFailed = a.status !== null && a.status !== "ok";
        const pass = relevant.some((v) =>
          (!state.type || (state.type === "type2" ? isType2(v) : isType1(v))) &&
          (!state.own || data.judges[v.judge].family === a.family) &&
          (!state.agrees || v.agrees === true) &&
          (!state.failures || answerFailed || failed(v)));
        if (!pass && !(state.failures && !state.type && !state.own && !state.agrees && answerFailed)) continue;
      }
      const d = spread(all);
      if (threshold !== null && (d === null || d < threshold)) continue;
      out.push({ a, all, relevant, spread: d });
    }
    const key = {
      score: (x) => { const s = x.relevant.filter(ok).map(overall); return s.length ? s.reduce((p, q) => p + q, 0) / s.length : -Infinity; },
      disagreement: (x) => (x.spread === null ? -Infinity : x.spread),
      residual: (x) => { const r = x.relevant.filter((v) => v.residual !== null).map((v) => Math.abs(v.residual)); return r.length ? Math.max(...r) : -Infinity; },
      system: (x) => {  // the answer's system model's calibrated score, then its strategy's
        const cal = data.systems[variant] || {};
        const m = (cal.model || {})[x.a.model], s = (cal.strategy || {})[x.a.strategy];
        return m === undefined ? -Infinity : m * 1000 + (s === undefined ? 0 : s);
      },
    }[state.sort];
    if (key) out.sort((x, y) => key(y) - key(x));
    return out;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("data-")) node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  const fmt = (x, digits = 2) => (x === null || x === undefined ? "-" : Number.isInteger(x) ? String(x) : Number(x).toFixed(digits));

  function verdictRows(x) {
    const table = el("table", { class: "verdicts" });
    const columns = data.kinds.flatMap((kind) => kind.columns.map((c) => ({ kind, c })));
    table.append(el("tr", {}, ...["judge", "family", "its own " + (LABEL || "label"), ...columns.map((col) => col.c), "residual"].map((h, i) =>
      el("th", { class: i < 3 ? "text" : "" }, h))));
    const agreement = (v) => (v.agrees === null || v.agrees === undefined ? "-" : v.agrees ? "shared" : "differs");
    const cell = (v, col) => {
      const got = v.k[col.kind.name];
      if (got === undefined) return "-";
      const value = got[col.c];
      if (got.s !== "ok") return col.c === col.kind.value ? got.s : "-";  // the kind's state where its decision goes
      return typeof value === "boolean" ? (value ? "yes" : "no") : fmt(value);
    };
    for (const v of x.all) {
      const judge = data.judges[v.judge];
      const own = judge.family === x.a.family;
      const flags = [isType2(v) ? "Type II" : null, isType1(v) ? "Type I" : null].filter(Boolean).join(", ");
      table.append(el("tr", { class: own ? "own" : "", "data-judge": judge.name },
        el("td", { class: "text" }, judge.name + (flags ? " (" + flags + ")" : "")), el("td", { class: "text" }, judge.family + (own ? " (own family)" : "")),
        el("td", { class: "text agrees" }, agreement(v)),
        ...columns.map((col) => el("td", {}, cell(v, col))), el("td", {}, fmt(v.residual))));
      const notes = [];
      data.kinds.forEach((kind, i) => {
        const got = v.k[kind.name];
        if (got === undefined) return;
        if (got.r) notes.push(kind.name + ": " + got.r);
        if (got.err) notes.push(kind.name + " failed: " + got.err);
        if (i === 0 && v.criteria) notes.push("clauses: " + Object.entries(v.criteria).map(([k, s]) => k + " " + s).join(", "));
      });
      if (notes.length) table.append(el("tr", { class: "reasoning" }, el("td", { class: "text", colSpan: columns.length + 4 }, notes.join(" | "))));
    }
    return table;
  }

  function probeList(x) {
    const variant = x.all.length ? x.all[0].jv : data.variants[0];
    const probes = (x.a.probes || []).filter((p) => p.jv === variant || p.jv === null);  // recognition, pairwise: no variant
    if (!probes.length) return null;
    const yes = (v) => (v === null || v === undefined ? "-" : v ? "yes" : "no");
    const text = (p) => {
      if (p.probe === "order")
        return `order probe, ${p.judge}: shown ${p.position} against ${p.other}; winners ${p.winner_ab ?? "-"} / ${p.winner_ba ?? "-"}; ${p.flipped === null ? p.status : p.flipped ? "flipped" : "stable"}`;
      if (p.probe === "pairwise")
        return `pairwise judge, ${p.judge}: against ${p.other}; shown first ${p.shown_first ?? "-"} | shown second ${p.shown_second ?? "-"}; ` +
          (p.flipped === null ? p.status : p.flipped ? "FLIPPED (the two orders disagree)" : "the two orders agree");
      if (p.probe === "recognition")
        return `recognition probe, ${p.judge}: ${p.role === "own" ? "its own answer against " + p.other : "set against its own answer " + p.other}; ` +
          `named its own shown first ${yes(p.own_first)}, shown second ${yes(p.own_second)}` +
          (p.claims_own === null && p.claims_other === null ? "" : `; alone, claimed its own ${yes(p.claims_own)}, the other ${yes(p.claims_other)}`) +
          (p.status === "ok" ? "" : `; ${p.status}`);
      return `padding probe, ${p.judge} (${p.kind}): ${fmt(p.original)} → ${fmt(p.padded)}, shift ${fmt(p.shift)}; ${p.flipped === null ? p.status : p.flipped ? "flipped" : "not flipped"}`;
    };
    return el("ul", { class: "probes" }, ...probes.map((p) => el("li", {}, text(p))));
  }

  function card(x) {
    const a = x.a;
    const sign = data.signs[a.item || a.sign] || { caption: "", description: "" };
    const correct = a.predicted === null ? null : a.predicted === a.category;
    const text = data.modality !== "image";  // a text run: the system read the scene text, shown under the image
    const left = el("div", {},
      a.image ? el("img", { src: a.image, alt: "variant " + a.variant, loading: "lazy" }) : null,
      text && a.scene ? el("div", { class: "scene" }, a.scene) : null,
      a.context ? el("div", { class: "scene context" }, a.context) : null,
      Object.keys(a.meta || {}).length ? el("div", { class: "meta" },
        Object.entries(a.meta).map(([k, v]) => `${k}: ${v}`).join(" · ")) : null);
    const right = el("div", {},
      el("div", { class: "gold" }, sign.caption ? el("strong", {}, sign.caption) : null, sign.caption ? " — " : "", sign.description),
      el("div", {}, `${a.model} (${a.family}), ${a.strategy}, repeat ${a.repeat}` +
        (OCCLUDED ? `, visibility ${a.visibility}, ${a.mode}` : "")),
      el("pre", { class: "response" }, a.text === null ? "(no answer: " + (a.status || "not run") + ")" : a.text),
      LABEL === null ? null : el("div", {}, LABEL + ": ", el("strong", {}, a.predicted ?? "none"), " ",
        correct === null ? "" : el("span", { class: correct ? "ok" : "bad" }, correct ? "correct" : "wrong (gold " + a.category + ")"),
        a.format_ok === false || a.format_ok === 0 ? el("span", { class: "bad" }, " format not followed") : null),
      verdictRows(x), probeList(x));
    return el("article", { class: "answer", "data-variant": a.variant, "data-system-model": a.model,
      "data-strategy": a.strategy, "data-repeat": String(a.repeat), "data-sign": a.sign, "data-item": a.item || a.sign },
      el("h2", {}, a.variant === (a.item || a.sign) ? a.variant : `${a.item || a.sign} · ${a.variant}`), left, right);
  }

  function render(resetPage) {
    const state = readControls();
    if (resetPage) shown = state.limit === "all" ? Infinity : Number(state.limit) || PAGE;
    const rows = select(state);
    const page = rows.slice(0, shown);
    list.replaceChildren(...page.map(card));
    count.textContent = `${rows.length} of ${data.answers.length} answers match; showing ${page.length}`;
    count.dataset.count = String(rows.length);
    more.hidden = page.length >= rows.length;
    return state;
  }

  function apply() {
    writeHash(render(true));
  }

  document.getElementById("summary").textContent =
    `run ${data.run.join(", ")}: ${data.answers.length} answers, ${data.judges.length} judges, judge variants ${data.variants.join(", ")}`;
  setControls(readHash());
  render(true);
  form.addEventListener("change", (e) => { if (e.target.name === "variant") fillModels(e.target.value); apply(); });
  form.addEventListener("input", (e) => { if (e.target.name === "disagree") apply(); });
  window.addEventListener("hashchange", () => { setControls(readHash()); render(true); });
  more.addEventListener("click", () => { shown += PAGE; render(false); });
  document.getElementById("reset").addEventListener("click", () => { setControls({}); apply(); });
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.ready = "1";
})();
