// pinpath's status page: reads /api/v1/status (version 1, docs/status-api.md) and refreshes it in place.
//
// Every string of the document came from outside the agent (endpoint names from included files, certificate
// subjects and SANs, server messages, URLs) and is hostile: it reaches the page only as text (textContent,
// createTextNode) or as the value of a harmless attribute (title, class names chosen here). Never innerHTML,
// insertAdjacentHTML, document.write, eval, nor an href or src built from the document. The page's
// Content-Security-Policy refuses inline script and style besides.
"use strict";

(function () {
  const STATUS_URL = "/api/v1/status";
  // The agent's refresh_ms is within these bounds; the page holds whatever it reads to them too (a delay past
  // 2^31-1 ms would make setTimeout fire at once, and the page poll without pause).
  const MINIMUM_REFRESH_MS = 5000;
  const MAXIMUM_REFRESH_MS = 60000;
  const DAYS_RED = 7;
  const DAYS_AMBER = 30;
  // Worst first, for the "state" sort.
  const STATE_ORDER = { down: 0, unreachable: 1, unknown: 2, up: 3 };
  const SVG = "http://www.w3.org/2000/svg";

  const byId = (id) => document.getElementById(id);
  const rowsBody = byId("endpoint-rows");
  const rows = new Map(); // endpoint name → its row, built once and updated in place
  const cellsOf = new WeakMap(); // row → its cells
  let documentNow = null; // the last document read
  let order = []; // the names in the order shown
  let selected = null; // the name whose detail is open
  let timer = null;

  // An element with class names and text; children are appended in order (strings become text nodes).
  function element(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  // Sets a node's text only when it changed: a refresh of 1,000 rows touches only what moved.
  function setText(node, text) {
    const value = text === null || text === undefined ? "" : String(text);
    if (node.textContent !== value) node.textContent = value;
  }

  function setClass(node, className) {
    if (node.className !== className) node.className = className;
  }

  function setTitle(node, title) {
    if (title) {
      if (node.getAttribute("title") !== title) node.setAttribute("title", title);
    } else if (node.hasAttribute("title")) {
      node.removeAttribute("title");
    }
  }

  // A state word the page knows, for a class name; anything else is shown as text with a neutral colour.
  function stateClass(state) {
    return Object.prototype.hasOwnProperty.call(STATE_ORDER, state) ? "state state-" + state : "state state-other";
  }

  function isNumber(value) {
    return typeof value === "number" && Number.isFinite(value);
  }

  // How long before the document was written `time` is: both are the agent's clock, so a browser on another
  // machine (through an SSH tunnel) with its clock off shows the same.
  function ago(time) {
    const then = Date.parse(time);
    if (!time || Number.isNaN(then)) return "";
    const generated = documentNow ? Date.parse(documentNow.generated_at) : NaN;
    const now = Number.isNaN(generated) ? Date.now() : generated;
    const seconds = Math.max(0, Math.round((now - then) / 1000));
    if (seconds < 90) return seconds + " s ago";
    if (seconds < 5400) return Math.round(seconds / 60) + " min ago";
    if (seconds < 172800) return Math.round(seconds / 3600) + " h ago";
    return Math.round(seconds / 86400) + " d ago";
  }

  function milliseconds(value) {
    if (!isNumber(value)) return "";
    return value < 10 ? value.toFixed(1) + " ms" : Math.round(value) + " ms";
  }

  function daysClass(days) {
    if (!isNumber(days)) return "days";
    if (days <= DAYS_RED) return "days days-red";
    if (days <= DAYS_AMBER) return "days days-amber";
    return "days days-ok";
  }

  function daysText(days) {
    if (!isNumber(days)) return "";
    if (days < 0) return "expired " + -days + " d ago";
    return days + " d left";
  }

  // The pin column: what the policy pins and whether the last probe's chain matched.
  function pinStatus(endpoint) {
    const policy = endpoint.policy;
    if (!policy || !Array.isArray(policy.pins) || policy.pins.length === 0) return { text: "no pins", className: "pins pins-none" };
    const enforcement = policy.enforced === false ? "report-only" : "enforced";
    if (policy.pins_matched === true) return { text: "matched (" + enforcement + ")", className: "pins pins-ok" };
    if (policy.pins_matched === false) return { text: "MISMATCH (" + enforcement + ")", className: "pins pins-bad" };
    return { text: "not checked yet", className: "pins pins-none" };
  }

  // ---- the machine: path and connectivity ----

  function definitions(list, pairs) {
    const fragment = document.createDocumentFragment();
    for (const [term, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      fragment.appendChild(element("dt", null, term));
      fragment.appendChild(element("dd", null, String(value)));
    }
    list.replaceChildren(fragment);
  }

  function renderMachine(doc) {
    const agent = doc.agent || {};
    setText(byId("agent"), "agent " + (agent.version || "?") + " · " + (agent.config || "") + (isNumber(agent.uptime_s) ? " · up " + Math.round(agent.uptime_s) + " s" : ""));
    const reload = agent.last_reload;
    if (reload && reload.outcome === "rejected") {
      showProblem("the last reload (" + (reload.time || "") + ") was rejected: " + (Array.isArray(reload.errors) ? reload.errors.join("; ") : ""));
    }
    const path = doc.path || {};
    const pathStatus = byId("path-status");
    setText(pathStatus, path.status || "unknown");
    setClass(pathStatus, "badge " + (path.status === "reachable" || path.status === "satisfied" ? "good" : "bad"));
    definitions(byId("path-details"), [
      ["interface", path.interface],
      ["kind", path.kind],
      ["gateways", Array.isArray(path.gateways) ? path.gateways.join(", ") : null],
      ["IPv4", path.ipv4 === undefined ? null : path.ipv4 ? "yes" : "no"],
      ["IPv6", path.ipv6 === undefined ? null : path.ipv6 ? "yes" : "no"],
      ["reason", path.reason],
    ]);
    const connectivity = doc.connectivity;
    const state = byId("connectivity-state");
    setText(state, connectivity ? connectivity.state : "not checked");
    setClass(state, "badge " + (!connectivity ? "neutral" : connectivity.state === "full" ? "good" : "bad"));
    definitions(byId("connectivity-details"), connectivity ? [["since", connectivity.since], ["reason", connectivity.reason]] : []);
  }

  // ---- the endpoints' table ----

  function buildRow(name) {
    const row = element("tr", "endpoint");
    row.dataset.name = name; // a data attribute holds text; nothing reads it as markup
    const cells = {};
    for (const key of ["state", "name", "target", "probe", "latency", "days", "pins"]) {
      cells[key] = element("td", "cell-" + key);
      row.appendChild(cells[key]);
    }
    const open = element("button", "open", name);
    open.type = "button";
    open.addEventListener("click", () => openDetail(name));
    cells.name.appendChild(open);
    cells.stateWord = element("span", "state");
    cells.state.appendChild(cells.stateWord);
    cellsOf.set(row, cells);
    return row;
  }

  function updateRow(row, endpoint) {
    const cells = cellsOf.get(row);
    const state = typeof endpoint.state === "string" ? endpoint.state : "unknown";
    setText(cells.stateWord, state);
    setClass(cells.stateWord, stateClass(state));
    setTitle(cells.stateWord, (endpoint.since ? "since " + endpoint.since : "") + (endpoint.cause ? " (" + endpoint.cause + ")" : ""));
    setClass(row, "endpoint row-" + (STATE_ORDER[state] === undefined ? "other" : state) + (endpoint.name === selected ? " selected" : ""));
    setText(cells.target, endpoint.url || "");
    const probe = endpoint.last_probe;
    setText(cells.probe, probe ? ago(probe.time) + (probe.outcome && probe.outcome !== "success" ? " · " + (probe.error_category || probe.outcome) : "") : "never");
    setTitle(cells.probe, probe ? (probe.time || "") + (probe.message ? ": " + probe.message : "") : "");
    setText(cells.latency, probe ? milliseconds(probe.total_ms) : "");
    const certificate = endpoint.certificate;
    const days = certificate ? certificate.days_left : null;
    setText(cells.days, certificate ? daysText(days) : "");
    setClass(cells.days, "cell-days " + daysClass(days));
    setTitle(cells.days, certificate ? "not after " + (certificate.not_after || "?") : "");
    const pins = pinStatus(endpoint);
    setText(cells.pins, pins.text);
    setClass(cells.pins, "cell-pins " + pins.className);
  }

  function controls() {
    return {
      name: byId("filter-name").value.trim().toLowerCase(),
      state: byId("filter-state").value,
      sort: byId("sort").value,
    };
  }

  // The names to show, in the order to show them.
  function arrange(endpoints) {
    const wanted = controls();
    const shown = [];
    endpoints.forEach((endpoint, index) => {
      const name = String(endpoint.name);
      if (wanted.name && !name.toLowerCase().includes(wanted.name)) return;
      if (wanted.state && endpoint.state !== wanted.state) return;
      shown.push({ name, index, endpoint });
    });
    const stateRank = (entry) => (STATE_ORDER[entry.endpoint.state] === undefined ? 4 : STATE_ORDER[entry.endpoint.state]);
    const daysLeft = (entry) => {
      const days = entry.endpoint.certificate ? entry.endpoint.certificate.days_left : null;
      return isNumber(days) ? days : Infinity; // no certificate last
    };
    if (wanted.sort === "state") shown.sort((a, b) => stateRank(a) - stateRank(b) || a.index - b.index);
    if (wanted.sort === "days") shown.sort((a, b) => daysLeft(a) - daysLeft(b) || a.index - b.index);
    return shown.map((entry) => entry.name);
  }

  function renderEndpoints(doc) {
    const endpoints = Array.isArray(doc.endpoints) ? doc.endpoints : [];
    const present = new Set();
    for (const endpoint of endpoints) {
      const name = String(endpoint.name);
      present.add(name);
      let row = rows.get(name);
      if (!row) {
        row = buildRow(name);
        rows.set(name, row);
      }
      updateRow(row, endpoint);
    }
    for (const [name, row] of rows) {
      if (!present.has(name)) {
        row.remove();
        rows.delete(name);
      }
    }
    placeRows(endpoints);
    const tally = {};
    for (const endpoint of endpoints) tally[endpoint.state] = (tally[endpoint.state] || 0) + 1;
    setText(byId("tally"), Object.keys(STATE_ORDER).filter((state) => tally[state]).map((state) => tally[state] + " " + state).join(" · ") || "none configured");
  }

  // Puts the rows shown in order (moving a row only when it is out of place) and takes the others out.
  function placeRows(endpoints) {
    const next = arrange(endpoints);
    const same = next.length === order.length && next.every((name, index) => name === order[index]);
    if (!same) {
      const fragment = document.createDocumentFragment();
      for (const name of next) fragment.appendChild(rows.get(name));
      rowsBody.replaceChildren(fragment);
      order = next;
    }
    setText(byId("shown"), next.length + " of " + endpoints.length + " shown");
  }

  // ---- the detail view ----

  function findEndpoint(name) {
    if (!documentNow || !Array.isArray(documentNow.endpoints)) return null;
    return documentNow.endpoints.find((endpoint) => String(endpoint.name) === name) || null;
  }

  function openDetail(name) {
    selected = name;
    for (const [rowName, row] of rows) row.classList.toggle("selected", rowName === name);
    renderDetail();
    const detail = byId("detail");
    detail.hidden = false;
    detail.scrollIntoView({ block: "nearest" });
  }

  function closeDetail() {
    selected = null;
    for (const row of rows.values()) row.classList.remove("selected");
    byId("detail").hidden = true;
  }

  function table(headings, records) {
    const head = element("tr", null, ...headings.map((heading) => element("th", null, heading)));
    const body = element("tbody");
    for (const record of records) body.appendChild(element("tr", null, ...record.map((value) => element("td", null, value === null || value === undefined ? "" : String(value)))));
    return element("table", "compact", element("thead", null, head), body);
  }

  // Each SAN in its own block, so that a bidi override in one (U+202E) ends with it rather than reordering the
  // names after it; and what the agent left out, counted.
  function sanList(certificate) {
    const sans = Array.isArray(certificate.sans) ? certificate.sans : [];
    const list = element("ul", "sans", ...sans.map((name) => element("li", null, String(name))));
    const omitted = omittedText(certificate.sans_omitted, "name");
    if (omitted) list.appendChild(element("li", "omitted", omitted));
    return list;
  }

  // "… and 3 more certificates", or null when nothing was left out.
  function omittedText(count, noun) {
    if (!isNumber(count) || count <= 0) return null;
    return "… and " + count + " more " + noun + (count === 1 ? "" : "s");
  }

  function section(title, ...children) {
    return element("section", "detail-part", element("h3", null, title), ...children);
  }

  // A line of the recent probes' durations; failures are red marks on the baseline.
  function durationChart(durations) {
    const width = 360;
    const height = 80;
    const pad = 4;
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "chart");
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(height));
    svg.setAttribute("role", "img");
    const values = durations.map((sample) => (isNumber(sample.total_ms) ? sample.total_ms : null));
    const highest = Math.max(1, ...values.filter((value) => value !== null));
    const step = durations.length > 1 ? (width - 2 * pad) / (durations.length - 1) : 0;
    const x = (index) => pad + index * step;
    const y = (value) => height - pad - (value / highest) * (height - 2 * pad);
    const points = [];
    durations.forEach((sample, index) => {
      if (values[index] !== null && sample.success !== false) points.push(x(index).toFixed(1) + "," + y(values[index]).toFixed(1));
    });
    const label = document.createElementNS(SVG, "title");
    label.textContent = durations.length + " probes, slowest " + milliseconds(highest);
    svg.appendChild(label);
    const baseline = document.createElementNS(SVG, "line");
    for (const [key, value] of [["x1", pad], ["x2", width - pad], ["y1", height - pad], ["y2", height - pad]]) baseline.setAttribute(key, String(value));
    baseline.setAttribute("class", "chart-axis");
    svg.appendChild(baseline);
    if (points.length > 0) {
      const line = document.createElementNS(SVG, "polyline");
      line.setAttribute("points", points.join(" "));
      line.setAttribute("class", "chart-line");
      svg.appendChild(line);
    }
    durations.forEach((sample, index) => {
      const mark = document.createElementNS(SVG, "circle");
      const failed = sample.success === false;
      mark.setAttribute("cx", x(index).toFixed(1));
      mark.setAttribute("cy", (failed || values[index] === null ? height - pad : y(values[index])).toFixed(1));
      mark.setAttribute("r", failed ? "3" : "2");
      mark.setAttribute("class", failed ? "chart-failure" : "chart-point");
      const tip = document.createElementNS(SVG, "title");
      tip.textContent = (sample.time || "") + " " + (failed ? "failed" : milliseconds(values[index]));
      mark.appendChild(tip);
      svg.appendChild(mark);
    });
    return svg;
  }

  function renderDetail() {
    if (selected === null) return;
    const endpoint = findEndpoint(selected);
    setText(byId("detail-title"), selected);
    const body = byId("detail-body");
    if (!endpoint) {
      body.replaceChildren(element("p", null, "This endpoint is no longer in the configuration."));
      return;
    }
    const parts = [];
    const state = typeof endpoint.state === "string" ? endpoint.state : "unknown";
    parts.push(
      element(
        "p",
        "summary",
        element("span", stateClass(state), state),
        " " + (endpoint.url || "") + " · " + (endpoint.kind || "") + (isNumber(endpoint.interval_ms) ? " · every " + endpoint.interval_ms / 1000 + " s" : "") +
          (endpoint.since ? " · since " + endpoint.since : "") + (endpoint.cause ? " · " + endpoint.cause : "")
      )
    );

    const probe = endpoint.last_probe;
    if (probe) {
      const phases = probe.phases_ms && typeof probe.phases_ms === "object" ? Object.entries(probe.phases_ms).map(([phase, value]) => phase + " " + milliseconds(value)).join(", ") : "";
      parts.push(
        section(
          "Last probe",
          table(
            ["time", "outcome", "status", "total", "phases", "address", "TLS"],
            [[probe.time, probe.outcome + (probe.error_category ? " (" + probe.error_category + ")" : ""), probe.status_code, milliseconds(probe.total_ms), phases, probe.remote_address, probe.tls_version]]
          ),
          probe.message ? element("p", "message", probe.message) : null
        )
      );
    }

    const durations = Array.isArray(endpoint.durations) ? endpoint.durations : [];
    if (durations.length > 0) parts.push(section("Recent probe durations", durationChart(durations)));

    const certificate = endpoint.certificate;
    if (certificate) {
      const chain = Array.isArray(certificate.chain) ? certificate.chain : [];
      const chainOmitted = omittedText(certificate.chain_omitted, "certificate");
      parts.push(
        section(
          "Certificate",
          element("p", null, element("span", daysClass(certificate.days_left), daysText(certificate.days_left)), " · not after " + (certificate.not_after || "?")),
          table(["subject", "issuer"], [[certificate.subject, certificate.issuer]]),
          element("h4", null, "Names"),
          sanList(certificate),
          element("h4", null, "Chain"),
          table(["depth", "subject", "issuer", "not after", "SPKI pin"], chain.map((link) => [link.depth, link.subject, link.issuer, link.not_after, link.spki_pin])),
          chainOmitted ? element("p", "omitted", chainOmitted) : null
        )
      );
    }

    const policy = endpoint.policy;
    if (policy) {
      const served = new Set();
      if (certificate && Array.isArray(certificate.chain)) for (const link of certificate.chain) served.add(link.spki_pin);
      const pins = Array.isArray(policy.pins) ? policy.pins : [];
      const pin = pinStatus(endpoint);
      parts.push(
        section(
          "Policy",
          element("p", null, "mode " + (policy.mode || "?") + (policy.profile ? " · profile " + policy.profile : "") + " · " + (policy.enforced === false ? "report-only" : "enforced") + (Array.isArray(policy.names) && policy.names.length ? " · policies " + policy.names.join(", ") : "")),
          element("p", null, "pins: ", element("span", pin.className, pin.text)),
          pins.length ? table(["pin known", "in the served chain"], pins.map((known) => [known, served.has(known) ? "yes" : "no"])) : null
        )
      );
    }

    const failure = endpoint.last_pin_failure;
    if (failure) {
      parts.push(
        section(
          "Last pin failure",
          element("p", "message", (failure.time || "") + " · " + (failure.enforced === false ? "report-only" : "enforced") + " · " + (failure.message || "")),
          table(["pin served"], (Array.isArray(failure.served_pins) ? failure.served_pins : []).map((servedPin) => [servedPin]))
        )
      );
    }
    body.replaceChildren(...parts);
  }

  // ---- the events ----

  function renderEvents(doc) {
    const events = Array.isArray(doc.events) ? doc.events.slice().reverse() : []; // newest first
    const fragment = document.createDocumentFragment();
    for (const event of events) {
      fragment.appendChild(
        element(
          "li",
          "event level-" + (["info", "warning", "error", "critical"].includes(event.level) ? event.level : "other"),
          element("time", null, event.time || ""),
          " ",
          element("span", "event-name", event.event || ""),
          event.endpoint ? element("span", "event-endpoint", event.endpoint) : null,
          " ",
          element("span", "event-summary", event.summary || "")
        )
      );
    }
    if (events.length === 0) fragment.appendChild(element("li", "event empty", "nothing yet"));
    byId("events").replaceChildren(fragment);
  }

  // ---- refreshing ----

  function showProblem(text) {
    const problem = byId("problem");
    setText(problem, text);
    problem.hidden = false;
  }

  function render(doc) {
    const started = performance.now();
    documentNow = doc;
    byId("problem").hidden = true;
    renderMachine(doc);
    renderEndpoints(doc);
    renderDetail();
    renderEvents(doc);
    setText(byId("updated"), "updated " + new Date().toLocaleTimeString() + (doc.generated_at ? " (document of " + doc.generated_at + ")" : ""));
    document.body.dataset.generatedAt = doc.generated_at || "";
    // Each rendering's time, for the browser's performance tools (and the 1,000-endpoint test, which prints them).
    performance.measure("pinpath-render", { start: started });
  }

  function refreshPeriod() {
    const wanted = documentNow && documentNow.agent && isNumber(documentNow.agent.refresh_ms) ? documentNow.agent.refresh_ms : MINIMUM_REFRESH_MS;
    return Math.min(MAXIMUM_REFRESH_MS, Math.max(MINIMUM_REFRESH_MS, wanted));
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const response = await fetch(STATUS_URL, { cache: "no-store", credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(STATUS_URL + " answered " + response.status);
      const doc = await response.json();
      if (!doc || doc.version !== 1) throw new Error(STATUS_URL + " is not a version 1 document");
      render(doc);
    } catch (error) {
      showProblem("cannot read the agent's status (" + error.message + "); showing the last one read, trying again");
    }
    timer = setTimeout(refresh, refreshPeriod());
  }

  function rearrange() {
    if (documentNow) placeRows(Array.isArray(documentNow.endpoints) ? documentNow.endpoints : []);
  }

  byId("filter-name").addEventListener("input", rearrange);
  byId("filter-state").addEventListener("change", rearrange);
  byId("sort").addEventListener("change", rearrange);
  byId("controls").addEventListener("submit", (event) => event.preventDefault());
  byId("detail-close").addEventListener("click", closeDetail);
  refresh();
})();
