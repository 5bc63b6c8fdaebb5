// witness report: renders the JSON in #data. Hand-written, no libraries,
// no network: every element is made with createElement or createElementNS.
(function () {
  "use strict";
  window.witnessStartedAt = performance.now();
  var D = JSON.parse(document.getElementById("data").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  var COLORS = { violation: "#c0392b", tampered: "#7d3c98", incomplete: "#7f8c8d", unauthenticated: "#b9770e", notice: "#2e86c1" };
  var rows = D.timeline.rows;
  var details = {};
  D.details.forEach(function (d) { details[d.row] = d; });

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (attrs[k] == null) continue;
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }
  function $(id) { return document.getElementById(id); }
  function words(s) { return String(s || "").replace(/_/g, " "); }
  function logName(li) { var l = D.logs[li] || {}; return l.server || "log " + (li + 1); }
  // "fs:e8 tool call write_file": the log (with several), the event, its kind in words, its label unless it repeats the kind
  function rowName(i) {
    var r = rows[i], kind = D.kinds[r[3]], label = D.labels[r[4]];
    return (D.logs.length > 1 ? logName(r[0]) + ":" : "") + "e" + r[1] + " " + words(kind) + (label && label !== kind ? " " + label : "");
  }
  function stepText(s) { return s.what ? s.what + (s.text ? " · " + s.text : "") : s.label.replace(/\n/g, " · "); }
  function cut(s, n) { s = String(s || ""); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  var REL = { used: "used by", wasDerivedFrom: "carried into", wasInformedBy: "informed", wasGeneratedBy: "generated" };

  // the first screen: what went wrong, worst first; the worst finding's chain; what the findings touched
  function renderStory() {
    var v = D.verdict, st = D.story, box = $("story-body"), bad = D.findings.length - st.notices;
    var intact = 0;
    D.logs.forEach(function (l) { l.checks.forEach(function (c) { if (c.id === "event-chain" && c.status === "pass") intact++; }); });
    var integ = intact === D.logs.length ? "the evidence is intact: hash chain and signed end hold in " + (D.logs.length > 1 ? "all " + D.logs.length + " logs" : "the log")
      : "the hash chain or signed end does not hold in " + (D.logs.length - intact) + " of " + D.logs.length + " log(s)";
    box.appendChild(el("p", { cls: "story-verdict" }, [el("span", { cls: "badge b-" + v.verdict, id: "verdict-badge", text: v.verdict }),
      " exit " + v.exit_code + " · " + (bad ? bad + " finding" + (bad > 1 ? "s" : "") + " that break the rules" : "no finding breaks the rules") + " · " + integ]));
    if (bad) {
      var ol = el("ol", { cls: "story-findings", id: "story-findings" });
      D.findings.forEach(function (f, fi) {
        if (f.class === "notice") return;
        ol.appendChild(el("li", { cls: "story-finding c-" + f.class, "data-code": f.code }, [el("span", { cls: "badge b-" + f.class, text: f.class }), " ",
          el("span", { cls: "sentence", id: fi === st.worst ? "story-worst" : null, text: f.sentence }), " ", el("a", { href: "#finding-" + fi, text: f.code })]));
      });
      box.appendChild(ol);
    }
    if (st.notices) box.appendChild(el("p", { cls: "muted", text: "and " + st.notices + " notice" + (st.notices > 1 ? "s" : "") + " (checks this evidence cannot run, things worth knowing): under Findings." }));
    if (st.path && st.path.length) {
      var wf = D.findings[st.worst];
      box.appendChild(el("h3", { text: "How it happened: the chain of the first finding (" + wf.code + "), source first" }));
      var path = el("ol", { cls: "story-path", id: "story-path" });
      st.path.forEach(function (p, i) {
        if (st.elided && i === 2) path.appendChild(el("li", { cls: "sstep elided", text: "… " + st.elided + " more steps (show chain below)" }));
        var b = el("button", { type: "button", cls: "sstep" + (p.role ? " " + p.role : ""), title: p.text || "" }, [el("span", { cls: "sref", text: p.ref + (p.role === "source" ? " · untrusted source" : "") }),
          el("span", { cls: "swhat", text: p.what }), p.text ? el("span", { cls: "stext", text: cut(p.text, 64) }) : null]);
        if (p.row >= 0) b.addEventListener("click", function () { showEvent(p.row); scrollList(p.row); });
        else b.disabled = true;
        path.appendChild(el("li", {}, [b, i < st.path.length - 1 ? el("span", { cls: "srel", text: "→ " + (REL[p.rel] || p.rel || "") }) : null]));
      });
      box.appendChild(path);
    }
    if (st.touched && st.touched.length) {
      box.appendChild(el("h3", { text: "What it touched" }));
      box.appendChild(el("ul", { cls: "touched", id: "touched" }, st.touched.map(function (t) {
        return el("li", {}, [el("strong", { text: t.what }), " ", el("code", { text: t.target }), el("span", { cls: "muted", text: " · " + (t.tool ? t.tool + ", " : "") + t.ref + (t.note ? " (" + t.note + ")" : "") })]);
      })));
    }
  }

  // verdict and integrity: one folded block per log, failing checks say why
  function checkTable(checks) {
    var ct = el("table", {}, [el("tr", {}, [el("th", { text: "check" }), el("th", { text: "status" }), el("th", { text: "why" })])]);
    checks.forEach(function (c) {
      ct.appendChild(el("tr", {}, [el("td", { text: c.title }), el("td", { cls: c.status, text: c.status }), el("td", { cls: c.status === "fail" ? "" : "muted", text: c.reason || "" })]));
    });
    return ct;
  }
  function tally(checks) {
    var n = {};
    checks.forEach(function (c) { n[c.status] = (n[c.status] || 0) + 1; });
    return ["pass", "fail", "not-checkable"].filter(function (k) { return n[k]; }).map(function (k) { return n[k] + " " + k; }).join(", ");
  }
  function renderVerdict() {
    var box = $("verdict");
    box.appendChild(el("p", { id: "verdict-line", text: D.verdict.line }));
    if (D.run_checks && D.run_checks.length) {
      box.appendChild(el("details", { cls: "log" }, [el("summary", { text: "the run's checks (" + D.logs.length + " logs judged as one): " + tally(D.run_checks) }), checkTable(D.run_checks)]));
    }
    D.logs.forEach(function (l) {
      var facts = [["verdict", l.verdict + " (exit " + l.exit_code + ")"], ["events", String(l.events)], ["channel", l.server || "—"],
        ["seal", l.seal || "none given: integrity only"], ["seal signed by", (l.signers || []).join(", ") || "—"],
        ["session end signed by", (l.end_signed_by || []).join(", ") || "unsigned"], ["provenance", l.provenance || ""],
        ["cassette", l.cassette || "—"]];
      var kids = [el("summary", {}, [el("strong", { text: l.file }), (l.session ? " · session " + l.session : "") + " · " + l.verdict + " · checks: " + tally(l.checks)])];
      kids.push(el("table", {}, facts.map(function (f) { return el("tr", {}, [el("th", { text: f[0] }), el("td", { text: f[1] })]); })));
      (l.qualifiers || []).forEach(function (q) { kids.push(el("p", { cls: "note", text: "⚠ " + q })); });
      if (l.read_error) kids.push(el("p", { cls: "fail", text: l.read_error }));
      kids.push(checkTable(l.checks));
      box.appendChild(el("details", { cls: "log" }, kids));
    });
    (D.notes || []).forEach(function (n) { box.appendChild(el("p", { cls: "note", text: n })); });
  }

  // timeline
  var selected = -1;
  function renderTimeline() {
    var box = $("timeline-lanes"), n = D.timeline.total;
    $("timeline-count").textContent = n + " events" + (D.timeline.buckets ? ", in buckets of " + D.timeline.bucket_size + " (click a bucket to list its events)" : "");
    // buckets holding a finding's event, in one pass over the rows
    var flagged = {};
    if (D.timeline.buckets) rows.forEach(function (r, i) { if (r[5] & 1) flagged[r[2] + "/" + Math.floor(i / D.timeline.bucket_size)] = true; });
    D.lanes.forEach(function (name, li) {
      var body = el("div", { cls: "lane-body" });
      box.appendChild(el("div", { cls: "lane" }, [el("div", { cls: "lane-name", title: name, text: name }), body]));
      if (D.timeline.buckets) {
        var b = D.timeline.buckets[li], nb = b.length, max = 1;
        b.forEach(function (c) { if (c > max) max = c; });
        b.forEach(function (c, bi) {
          if (!c) return;
          var lo = bi * D.timeline.bucket_size, hi = Math.min(lo + D.timeline.bucket_size, rows.length) - 1;
          var hasF = flagged[li + "/" + bi];
          var btn = el("button", { cls: "bk" + (hasF ? " f1" : ""), type: "button", "aria-label": name + ": " + c + " events, rows " + lo + " to " + hi,
            title: name + ": " + c + " events (" + lo + "–" + hi + ")" });
          btn.style.left = (bi / nb * 100) + "%";
          btn.style.width = "max(3px, calc(" + (100 / nb) + "% - 1px))";
          btn.style.height = Math.max(3, Math.round(26 * c / max)) + "px";
          btn.addEventListener("click", function () { scrollList(lo); });
          body.appendChild(btn);
        });
      } else {
        rows.forEach(function (r, i) {
          if (r[2] !== li) return;
          var btn = el("button", { cls: "ev" + (r[5] & 1 ? " f1" : ""), type: "button", "data-row": String(i), "aria-label": rowName(i), title: rowName(i) });
          btn.style.left = "calc(" + (n > 1 ? i / (n - 1) : 0) + " * (100% - 14px))";
          btn.addEventListener("click", function () { showEvent(i); });
          body.appendChild(btn);
        });
      }
    });
    renderList();
  }

  // the event list is virtualised: only the visible rows exist
  var RH = 24;
  function renderList() {
    var list = $("event-list"), spacer = el("div"), shown = {};
    spacer.style.height = rows.length * RH + "px";
    spacer.style.position = "relative";
    list.appendChild(spacer);
    // rows already drawn stay (a focused row keeps its focus while the list scrolls)
    function draw() {
      var top = list.scrollTop, h = list.clientHeight || 320;
      var first = Math.max(0, Math.floor(top / RH) - 5), last = Math.min(rows.length, Math.ceil((top + h) / RH) + 5);
      Object.keys(shown).forEach(function (k) {
        var i = +k;
        if ((i < first || i >= last) && shown[k] !== document.activeElement) { spacer.removeChild(shown[k]); delete shown[k]; }
        else if (shown[k]) shown[k].setAttribute("aria-pressed", i === selected ? "true" : "false");
      });
      var before = null;
      for (var i = last - 1; i >= first; i--) {
        if (shown[i]) { before = shown[i]; continue; }
        (function (i) {
          var b = el("button", { cls: "vrow" + (rows[i][5] & 1 ? " f1" : ""), type: "button", "data-row": String(i), "aria-pressed": i === selected ? "true" : "false", text: (rows[i][5] & 1 ? "⚑ " : "") + rowName(i) + (rowName(i).indexOf(D.lanes[rows[i][2]]) < 0 ? "  · " + D.lanes[rows[i][2]] : "") });
          b.style.top = i * RH + "px";
          b.addEventListener("click", function () { showEvent(i); });
          spacer.insertBefore(b, before);
          shown[i] = b;
          before = b;
        })(i);
      }
    }
    list.addEventListener("scroll", draw);
    list._draw = draw;
    draw();
  }
  function scrollList(i) {
    var list = $("event-list");
    list.scrollTop = Math.max(0, i * RH - 2 * RH);
    list._draw();
    var b = list.querySelector('[data-row="' + i + '"]');
    if (b) b.focus();
  }

  function showEvent(i) {
    selected = i;
    var box = $("event-detail"), r = rows[i], d = details[i];
    while (box.firstChild) box.removeChild(box.firstChild);
    Array.prototype.forEach.call(document.querySelectorAll(".ev.sel"), function (e) { e.classList.remove("sel"); });
    var dot = document.querySelector('.ev[data-row="' + i + '"]');
    if (dot) dot.classList.add("sel");
    $("event-list")._draw();
    box.appendChild(el("h3", { text: rowName(i) }));
    box.appendChild(el("p", { cls: "muted", text: "lane " + D.lanes[r[2]] + " · log " + D.logs[r[0]].file }));
    if (!d) {
      box.appendChild(el("p", { cls: "note", text: "Payload and wire bytes of this event are not embedded (the report keeps them for " + D.details.length + " events). Read them in " + D.logs[r[0]].file + " at seq " + r[1] + "." }));
      return;
    }
    var payload = d.payload || "", wire = d.wire || "";
    var facts = [["id", d.id], ["kind", d.kind], ["time", d.ts], ["source", d.source], ["tool", d.tool], ["method", d.method], ["JSON-RPC id", d.rpc_id], ["links", d.links], ["payload sha256", d.sha256]];
    box.appendChild(el("table", {}, facts.filter(function (f) { return f[1]; }).map(function (f) { return el("tr", {}, [el("th", { text: f[0] }), el("td", { text: f[1] })]); })));
    box.appendChild(el("h4", { text: "payload" + (d.payload_bytes > payload.length ? " (first " + payload.length + " of " + d.payload_bytes + " bytes)" : "") }));
    box.appendChild(el("pre", { id: "payload", text: payload || "(none)" }));
    box.appendChild(el("h4", { text: "wire bytes (cassette)" + (d.wire_bytes > wire.length ? " (first " + wire.length + " of " + d.wire_bytes + " bytes)" : "") }));
    if (wire) box.appendChild(el("pre", { id: "wire", text: wire }));
    if (d.wire_note) box.appendChild(el("p", { cls: "note", text: d.wire_note }));
  }

  // findings and their chains
  function renderFindings() {
    var box = $("findings-list");
    if (!D.findings.length) { box.appendChild(el("p", { text: "No findings." })); return; }
    D.findings.forEach(function (f, fi) {
      var btn = el("button", { type: "button", cls: "show-chain", "aria-expanded": "false", "aria-controls": "chain-" + fi, text: "show chain" });
      var ev = f.row >= 0 ? el("button", { type: "button", cls: "goto", text: f.event }) : null;
      if (ev) ev.addEventListener("click", function () { showEvent(f.row); scrollList(f.row); });
      var chainBox = el("div", { cls: "chain", id: "chain-" + fi, hidden: "" });
      var card = el("div", { cls: "finding c-" + f.class, "data-code": f.code, id: "finding-" + fi }, [
        el("div", {}, [el("span", { cls: "badge b-" + f.class, text: f.class }), " ", el("strong", { text: f.code }), f.tool ? " · tool " + f.tool : "", ev ? " · event " : "", ev]),
        el("p", { cls: "sentence", text: f.sentence }), f.sentence !== f.message ? el("p", { cls: "muted", text: "verify: " + f.message }) : null, btn, chainBox]);
      btn.addEventListener("click", function () {
        var open = chainBox.hasAttribute("hidden");
        if (open) { if (!chainBox.firstChild) drawChain(f, chainBox); chainBox.removeAttribute("hidden"); }
        else chainBox.setAttribute("hidden", "");
        btn.setAttribute("aria-expanded", open ? "true" : "false");
        btn.textContent = open ? "hide chain" : "show chain";
      });
      box.appendChild(card);
    });
  }
  function drawChain(f, box) {
    if (!f.chain) { box.appendChild(el("p", { cls: "note", text: f.chain_note || "no chain" })); return; }
    var st = f.chain.steps, W = 190, H = 44, GAP = 46, y0 = 10, far = 0;
    st.forEach(function (s, i) { (s.links || []).forEach(function (l) { if (l.to !== i - 1) far = 1; }); });
    var svg = sv("svg", { width: st.length * (W + GAP) + 20, height: H + 2 * y0 + (far ? 56 : 0), role: "img", "aria-label": "causal chain of " + f.code });
    var defs = sv("defs"), m = sv("marker", { id: "ah" + f.code + f.row, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" });
    m.appendChild(sv("path", { d: "M0,0L10,5L0,10z", fill: "#555" })); defs.appendChild(m); svg.appendChild(defs);
    st.forEach(function (s, i) {
      var x = 10 + i * (W + GAP), last = i === st.length - 1;
      var g = sv("g", { "class": "step" });
      g.appendChild(sv("rect", { x: x, y: y0, width: W, height: H, rx: s.kind === "activity" ? 2 : 18, fill: last ? (COLORS[f.class] || "#c0392b") : (s.kind === "activity" ? "#9fb1fc" : "#fffc87"), stroke: "#555" }));
      (s.what ? [(s.ref ? s.ref + " " : "") + s.what, s.text || ""] : s.label.split("\n").slice(0, 2)).forEach(function (line, li) {
        var t = sv("text", { x: x + W / 2, y: y0 + 17 + li * 14, "text-anchor": "middle" });
        if (last) t.setAttribute("style", "fill:#fff;font-weight:600");
        t.textContent = line.length > 30 ? line.slice(0, 29) + "…" : line;
        g.appendChild(t);
      });
      svg.appendChild(g);
      (s.links || []).forEach(function (l, k) {
        var tx = 10 + l.to * (W + GAP) + W, adj = l.to === i - 1;
        if (adj) {
          svg.appendChild(sv("line", { x1: x, y1: y0 + H / 2, x2: tx + 2, y2: y0 + H / 2, stroke: "#555", "marker-end": "url(#ah" + f.code + f.row + ")" }));
          var t = sv("text", { x: x - GAP / 2, y: y0 + H / 2 - 4, "text-anchor": "middle", style: "font-size:9px" }); t.textContent = l.rel; svg.appendChild(t);
        } else {
          var yy = y0 + H + 14 + 10 * (k % 4);
          svg.appendChild(sv("path", { d: "M" + (x + 20) + "," + (y0 + H) + " L" + (x + 20) + "," + yy + " L" + (tx - 20) + "," + yy + " L" + (tx - 20) + "," + (y0 + H + 2), fill: "none", stroke: "#999", "stroke-dasharray": "3,2", "marker-end": "url(#ah" + f.code + f.row + ")" }));
        }
      });
    });
    box.appendChild(svg);
    var ol = el("ol", { cls: "chain-steps" });
    st.forEach(function (s, i) {
      var r = f.chain_rows[i];
      var item = el("li", {}, [(s.ref ? s.ref + " · " : "") + stepText(s), (s.links || []).length ? el("span", { cls: "muted", text: "  ← " + s.links.map(function (l) { return l.rel + " " + (st[l.to].ref || st[l.to].event || st[l.to].label.split("\n")[0]); }).join(", ") }) : null]);
      if (r >= 0) {
        var b = el("button", { type: "button", text: "event" });
        b.addEventListener("click", function () { showEvent(r); scrollList(r); });
        item.appendChild(document.createTextNode(" "));
        item.appendChild(b);
      }
      ol.appendChild(item);
    });
    box.appendChild(ol);
    if (f.chain.truncated) box.appendChild(el("p", { cls: "note", text: "more causes exist than the chain shows" }));
    if (f.removing) {
      var w = f.removing;
      box.appendChild(el("p", { cls: "what-if", text: "Without " + w.label.replace(/\n/g, " ") + ": " + w.removed + " nodes go with it (" + w.actions + " of " + w.of_actions + " actions), " + w.not_replayable + " of them not replayable, synergy residual " + w.synergy_residual + "." }));
      if (w.effects && w.effects.length) box.appendChild(el("p", { cls: "muted", text: "not replayable: " + w.effects.join("; ") + (w.note ? " (" + w.note + ")" : "") }));
    }
  }

  // the causal graph
  function renderGraph() {
    var p = D.graph, box = $("graph-svg");
    $("graph-summary").textContent = p.summary || (p.total + " nodes, one column per event, time left to right; edges point from the dependent node to its cause; red: a finding");
    if (!p.nodes || !p.nodes.length) { box.appendChild(el("p", { cls: "note", text: "no graph" })); return; }
    var svg = sv("svg", { width: p.w, height: p.h, role: "img", "aria-label": "causal graph in time order" });
    var defs = sv("defs"), m = sv("marker", { id: "gah", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "6", markerHeight: "6", orient: "auto" });
    m.appendChild(sv("path", { d: "M0,0L10,5L0,10z", fill: "#777" })); defs.appendChild(m); svg.appendChild(defs);
    D.lanes.forEach(function (name, i) {
      svg.appendChild(sv("rect", { x: 0, y: p.lanes[i], width: p.w, height: p.lane_h, fill: i % 2 ? "#f6f8fb" : "#fff" }));
      var t = sv("text", { x: 6, y: p.lanes[i] + 14 }); t.textContent = name; svg.appendChild(t);
    });
    var R = p.summary ? 22 : 7;
    p.edges.forEach(function (e) {
      var a = p.nodes[e.from], b = p.nodes[e.to];
      var dx = b.x - a.x, dy = b.y - a.y, len = Math.sqrt(dx * dx + dy * dy) || 1;
      var l = sv("line", { x1: a.x, y1: a.y, x2: b.x - dx / len * R, y2: b.y - dy / len * R, stroke: "#888", "stroke-width": e.n ? Math.min(6, 1 + Math.log(e.n)) : 1, "marker-end": "url(#gah)" });
      if (e.dashed) l.setAttribute("stroke-dasharray", "4,3");
      var tt = sv("title"); tt.textContent = e.rel + (e.n ? " × " + e.n : ""); l.appendChild(tt);
      svg.appendChild(l);
    });
    p.nodes.forEach(function (n) {
      var fill = n.class ? (COLORS[n.class] || "#c0392b") : (n.kind === "activity" ? "#9fb1fc" : n.kind === "window" ? "#dfe6f5" : "#fffc87");
      var s = n.kind === "entity" ? sv("circle", { cx: n.x, cy: n.y, r: R, fill: fill, stroke: "#666" })
        : sv("rect", { x: n.x - R, y: n.y - (n.kind === "window" ? R : R), width: 2 * R, height: 2 * R, fill: fill, stroke: "#666" });
      var tt = sv("title"); tt.textContent = n.label; s.appendChild(tt);
      svg.appendChild(s);
      if (n.kind === "window") { var t = sv("text", { x: n.x, y: n.y + 4, "text-anchor": "middle" }); t.textContent = String(n.count); svg.appendChild(t); }
    });
    box.appendChild(svg);
  }

  function renderCounterfactuals() {
    var box = $("rank");
    if (!D.rank.length) { box.appendChild(el("p", { cls: "note", text: "no ranking (no graph)" })); return; }
    var t = el("table", {}, [el("tr", {}, ["rank", "action", "removes (nodes)", "actions", "not replayable", "synergy residual"].map(function (h) { return el("th", { text: h }); }))]);
    D.rank.forEach(function (r) {
      t.appendChild(el("tr", {}, [String(r.rank), r.label.replace(/\n/g, " · ") + (D.logs.length > 1 ? " (log " + (r.log + 1) + ")" : ""), String(r.compensation_size), String(r.compensation_activities), String(r.not_replayable), String(r.synergy_residual)].map(function (c) { return el("td", { text: c }); })));
    });
    box.appendChild(t);
    var per = $("per-finding");
    D.findings.forEach(function (f) {
      var w = f.removing;
      per.appendChild(el("li", { text: f.code + (f.event ? " (" + f.event + ")" : "") + ": " + (w ? "removing " + w.label.replace(/\n/g, " ") + " removes " + w.removed + " nodes, " + w.actions + " of " + w.of_actions + " actions, " + w.not_replayable + " not replayable" : "no removable cause in its chain") }));
    });
  }

  function renderFirewall() {
    var fw = D.firewall, sec = $("firewall");
    if (!fw) { sec.setAttribute("hidden", ""); return; }
    var box = $("firewall-body");
    box.appendChild(el("p", { text: fw.verdict }));
    box.appendChild(el("p", { text: fw.authentication }));
    var t = el("table", {}, [el("tr", {}, ["#", "check", "direction", "operation", "disposition", "reason"].map(function (h) { return el("th", { text: h }); }))]);
    fw.checks.forEach(function (c) {
      t.appendChild(el("tr", {}, [String(c.seq), c.id, c.direction, c.operation, c.disposition, c.reason || ""].map(function (x) { return el("td", { text: x }); })));
    });
    box.appendChild(t);
    if (fw.more) box.appendChild(el("p", { cls: "note", text: fw.more + " more checks in the audit" }));
  }

  // each phase's time, for the load-time benchmark (TestBrowserLoadTime)
  var phases = {};
  function phase(name, f) { var t = performance.now(); f(); phases[name] = Math.round(performance.now() - t); }
  phases.parse = Math.round(performance.now() - window.witnessStartedAt);
  phase("story", renderStory);
  phase("verdict", renderVerdict);
  phase("timeline", renderTimeline);
  phase("findings", renderFindings);
  phase("graph", renderGraph);
  phase("counterfactuals", renderCounterfactuals);
  phase("firewall", renderFirewall);
  phase("first-event", function () {
    if (D.findings.length && D.findings[0].row >= 0) showEvent(D.findings[0].row);
    else if (rows.length) showEvent(0);
  });
  window.witnessPhases = phases;
  window.witnessRenderedAt = performance.now();
  document.body.setAttribute("data-rendered", "true");
})();
