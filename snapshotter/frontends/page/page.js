// The page of `snapshotter ui`: a timeline of one folder's snapshots, one lane
// per session, and the change of what is picked, side by side, with the
// actions the command line has. Every document it reads is a command's --json
// output (ui_commands.py); every change is a POST, shown first as a dry run.
// Text from the folder is only ever set as text, never as HTML.
"use strict";

const TOKEN = document.querySelector('meta[name="snapshotter-token"]').content;
const PAGE = 100;
const PRE_TURN = "pre-turn:";
const POST_TURN = "post-turn:";
const PERSON = "";
const BUDGET = 1000; // lines (or files) drawn at once: the rest waits behind a "Show more" button

const state = {
  snaps: [], // newest first, as `log` lists them
  byId: new Map(),
  lanes: [], // lane keys, in the order first seen
  agents: new Map(), // lane key -> agent name
  done: false,
  picked: [], // up to two ids to compare
  view: null, // what the detail panel shows: a function that draws it again
  reverted: new Map(), // hunk id -> when this page reverted it (a revert's own record: not offered again)
};

// -- talking to the server ------------------------------------------------------------------

async function read(name, params = {}) {
  const query = new URLSearchParams(params);
  const response = await fetch(`/api/${name}?${query}`, { headers: { "X-Snapshotter-Token": TOKEN } });
  return answer(response);
}

async function change(name, body) {
  const response = await fetch(`/api/${name}`, {
    method: "POST",
    headers: { "X-Snapshotter-Token": TOKEN, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return answer(response);
}

async function answer(response) {
  const document_ = await response.json();
  if (document_.error !== undefined) {
    const error = new Error(document_.error.message || document_.error);
    error.result = document_.error.result;
    throw error;
  }
  return document_.result;
}

// -- small helpers -----------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "onclick") node.addEventListener("click", value);
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const short = (id) => id.slice(0, 12);
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// A text from the folder's history as it is stored, never turned around: bidi controls shown, not obeyed.
const readable = (text) =>
  (text || "").replace(BIDI, (ch) => `<U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}>`);
const firstLine = (text) => readable((text || "").split("\n")[0]);
const laneOf = (snap) => snap.session || PERSON;

function pad(n) {
  return String(n).padStart(2, "0");
}

// One time format everywhere (timeline, detail header): 24-hour, the day as YYYY-MM-DD, local time.
function when(iso) {
  const date = new Date(iso);
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return [time, `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`];
}

const stamp = (iso) => when(iso).reverse().join(" ");

// Lane colours: a fixed palette of clearly different colours. A session's slot is
// its name's hash, moved on to the next free slot when another lane on the page
// has it, so names alike (agent-a, agent-b) never share a colour; the same history
// gives the same colours at every load. Past the palette: hues a golden angle apart.
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#17becf", "#e377c2", "#8c564b", "#b5a000"];
const colours = new Map();

function fnv(key) {
  let h = 0x811c9dc5;
  for (const ch of key) h = Math.imul(h ^ ch.codePointAt(0), 0x01000193) >>> 0;
  return h;
}

function laneColor(key) {
  if (key === PERSON) return "hsl(215 15% 55%)";
  if (!colours.has(key)) {
    const taken = new Set(colours.values());
    const free = PALETTE.map((_, k) => PALETTE[(fnv(key) + k) % PALETTE.length]).find((c) => !taken.has(c));
    colours.set(key, free || `hsl(${Math.round((colours.size * 137.508) % 360)} 60% 42%)`);
  }
  return colours.get(key);
}

function laneName(key) {
  if (key === PERSON) return "you (no session)";
  const agent = state.agents.get(key);
  if (agent && key.startsWith(agent + "-")) return `${agent} · ${key.slice(agent.length + 1, agent.length + 9)}`;
  return agent ? `${agent} · ${key}` : key;
}

function failure(message) {
  return el("p", { class: "failure" }, message);
}

// -- the timeline ------------------------------------------------------------------------------

async function loadOlder() {
  const button = document.getElementById("more");
  button.disabled = true;
  try {
    const oldest = state.snaps.at(-1); // the next page starts below it: a page's cost, however deep
    const page = await read("log", oldest ? { before: oldest.id, limit: PAGE } : { limit: PAGE });
    add(page, false);
    state.done = page.length < PAGE;
  } finally {
    button.disabled = state.done;
    button.textContent = state.done ? "The oldest snapshot is shown" : "Load older snapshots";
  }
  drawTimeline();
}

async function loadNewer() {
  const page = await read("log", { limit: PAGE });
  const fresh = page.filter((snap) => !state.byId.has(snap.id));
  if (fresh.length === page.length && state.snaps.length) {
    state.snaps = []; // more came than a page holds: start again from the newest
    state.byId.clear();
    state.done = false;
  }
  add(fresh, true);
  drawTimeline();
}

function add(snaps, newer) {
  const kept = snaps.filter((snap) => !state.byId.has(snap.id));
  for (const snap of kept) {
    state.byId.set(snap.id, snap);
    const lane = laneOf(snap);
    if (!state.lanes.includes(lane)) {
      state.lanes.push(lane);
      laneColor(lane);
    }
    if (snap.metadata.agent && !state.agents.has(lane)) state.agents.set(lane, snap.metadata.agent);
  }
  state.snaps = newer ? [...kept, ...state.snaps] : [...state.snaps, ...kept];
}

function turns() {
  // Each lane's turns, oldest first: a pre-turn opens one, its post-turn closes it.
  const open = new Map();
  const turnOf = new Map();
  for (let i = state.snaps.length - 1; i >= 0; i--) {
    const snap = state.snaps[i];
    const lane = laneOf(snap);
    const label = snap.label || "";
    if (label.startsWith(PRE_TURN)) {
      open.set(lane, { lane, number: label.slice(PRE_TURN.length), pre: snap, members: [] });
    }
    const turn = open.get(lane);
    if (turn) {
      turn.members.push(snap);
      turnOf.set(snap.id, turn);
    }
    if (label.startsWith(POST_TURN)) open.delete(lane);
  }
  return turnOf;
}

function lanesInOrder() {
  // The person first, then the sessions by their newest snapshot.
  const newest = new Map();
  state.snaps.forEach((snap, at) => {
    if (!newest.has(laneOf(snap))) newest.set(laneOf(snap), at);
  });
  return [...state.lanes].sort((a, b) => (a === PERSON ? -1 : b === PERSON ? 1 : newest.get(a) - newest.get(b)));
}

function drawTimeline() {
  const lanes = lanesInOrder();
  const heads = document.getElementById("lane-heads");
  heads.replaceChildren(el("th", { class: "when" }, "time"));
  for (const lane of lanes) {
    const head = el("th", { class: "lane-head", "data-lane": lane }, laneName(lane));
    head.style.setProperty("--lane", laneColor(lane));
    heads.append(head);
  }
  const table = document.getElementById("lanes");
  table.style.minWidth = `calc(4.2rem + ${lanes.length} * 9.5rem)`;
  table.style.maxWidth = `calc(4.2rem + ${lanes.length} * 18rem)`;
  const turnOf = turns();
  const rows = document.getElementById("rows");
  rows.replaceChildren();
  for (const snap of state.snaps) {
    const lane = lanes.indexOf(laneOf(snap));
    const turn = turnOf.get(snap.id);
    if (turn && turn.members[turn.members.length - 1] === snap) rows.append(turnRow(turn, lanes.length, lane));
    const cells = lanes.map(() => el("td", { class: "lane" }));
    cells[lane].append(card(snap, turn));
    cells[lane].style.setProperty("--lane", laneColor(laneOf(snap)));
    const [time, day] = when(snap.created_at);
    rows.append(el("tr", {}, el("td", { class: "when", title: `${day} ${time}` }, time), ...cells));
  }
  hiddenLanes();
  if (!document.body.dataset.ready) {
    document.body.dataset.readyAt = String(Math.round(performance.now())); // ms since navigation: bench_ui.py
    document.body.dataset.ready = "1";
  }
}

function hiddenLanes() {
  // Lanes that do not fit are to the right (the timeline scrolls): say how many, and go there on a click.
  const timeline = document.getElementById("timeline");
  const right = timeline.getBoundingClientRect().right;
  const left = timeline.getBoundingClientRect().left + 64;
  const heads = [...document.querySelectorAll(".lane-head")];
  const after = heads.filter((head) => head.getBoundingClientRect().right > right + 1).length;
  const before = heads.filter((head) => head.getBoundingClientRect().left < left - 1).length;
  const note = document.getElementById("lanes-more");
  note.hidden = !after && !before;
  const parts = [];
  if (before) parts.push(`← ${before} lane${before === 1 ? "" : "s"} to the left`);
  if (after) parts.push(`${after} more lane${after === 1 ? "" : "s"} to the right →`);
  note.textContent = parts.join(" · ");
  note.onclick = () => timeline.scrollBy({ left: after ? timeline.clientWidth / 2 : -timeline.clientWidth / 2 });
}

function turnRow(turn, width, lane) {
  const cells = Array.from({ length: width }, () => el("td", { class: "lane" }));
  const open = !turn.members.some((snap) => (snap.label || "").startsWith(POST_TURN));
  const prompt = firstLine(turn.pre.message) || "(no prompt)";
  const head = el(
    "button",
    { class: "turn-head", type: "button", "data-turn": turn.number, onclick: () => show(() => turnView(turn)) },
    `turn ${turn.number}${open ? " (open)" : ""}: `,
    el("span", { class: "prompt" }, prompt),
  );
  cells[lane].append(head);
  cells[lane].style.setProperty("--lane", laneColor(turn.lane));
  return el("tr", { class: "turn-row" }, el("td", { class: "when" }), ...cells);
}

function card(snap, turn) {
  const picked = state.picked.includes(snap.id);
  const tick = el("input", {
    type: "checkbox",
    checked: picked,
    title: "tick two to compare",
    onclick: (event) => {
      event.stopPropagation();
      pick(snap.id, event.target.checked);
    },
  });
  return el(
    "div",
    {
      class: `snap${picked ? " picked" : ""}${turn ? " in-turn" : ""}`,
      "data-id": snap.id,
      tabIndex: 0,
      onclick: () => {
        state.picked = [snap.id];
        show(() => snapshotView(snap));
      },
    },
    el(
      "div",
      { class: "snap-top" },
      tick,
      el("code", {}, short(snap.id).slice(0, 8)),
      el(
        "span",
        { class: "counts", title: "files changed, lines added and deleted, against the snapshot before it" },
        `${snap.files_changed} file${snap.files_changed === 1 ? "" : "s"} `,
        el("span", { class: "plus" }, `+${snap.additions}`),
        " ",
        el("span", { class: "minus" }, `−${snap.deletions}`),
      ),
    ),
    el(
      "div",
      { class: "message" },
      snap.label ? el("span", { class: "label" }, readable(snap.label)) : null,
      firstLine(snap.message) || (snap.label ? "" : "(no message)"),
    ),
  );
}

function pick(id, on) {
  state.picked = state.picked.filter((other) => other !== id);
  if (on) state.picked.push(id);
  state.picked = state.picked.slice(-2);
  if (state.picked.length === 2) {
    const [a, b] = state.picked.map((other) => state.byId.get(other)).sort((x, y) => x.sequence - y.sequence);
    show(() => compareView(a, b));
  } else if (state.picked.length === 1) {
    show(() => snapshotView(state.byId.get(state.picked[0])));
  }
  drawTimeline();
}

// -- the detail panel --------------------------------------------------------------------------

function paged(items, draw, cost, noun) {
  // Draw items until BUDGET is spent (always at least one), the rest behind a button that
  // draws the next part: a big change's first screen is ready at once, and nothing is ever
  // passed as one argument list or walked by recursion, whatever its size.
  // Returns the button (to put after what holds the items), or null when all are drawn.
  let at = 0;
  const button = el("button", { type: "button", class: "small show-more" });
  const next = () => {
    let spent = 0;
    while (at < items.length && (spent === 0 || spent + cost(items[at]) <= BUDGET)) {
      spent += cost(items[at]);
      draw(items[at]);
      at += 1;
    }
    const left = items.length - at;
    if (left) button.textContent = `Show more: ${left.toLocaleString("en")} ${noun} not shown yet`;
    else button.remove();
  };
  button.addEventListener("click", next);
  next();
  return at < items.length ? button : null;
}

const patchLines = (hunk) => hunk.old_lines + hunk.additions + 1;

async function show(view) {
  state.view = view;
  const panel = document.getElementById("detail");
  panel.replaceChildren(el("p", { class: "empty" }, "loading…"));
  try {
    const drawn = await view();
    if (state.view === view) panel.replaceChildren(...drawn);
  } catch (error) {
    if (state.view === view) panel.replaceChildren(failure(error.message));
  }
  drawTimeline();
}

async function snapshotView(snap) {
  const head = [
    el("h2", {}, "snapshot ", el("code", {}, short(snap.id)), snap.label ? el("span", { class: "label" }, readable(snap.label)) : null),
    el("p", { class: "message-full" }, readable(snap.message) || "(no message)"),
    el("p", { class: "meta" }, `${laneName(laneOf(snap))} · `, el("time", { dateTime: snap.created_at }, stamp(snap.created_at))),
  ];
  const actions = el(
    "div",
    { class: "actions" },
    el("button", { type: "button", onclick: () => restore(snap, null) }, "Restore this snapshot…"),
    el("button", { type: "button", onclick: () => restore(snap, chosenFiles()) }, "Restore the ticked files…"),
    el("button", { type: "button", onclick: () => pin(snap) }, "Pin…"),
  );
  const turn = turns().get(snap.id);
  if (turn) actions.append(el("button", { type: "button", onclick: () => show(() => turnView(turn)) }, `Turn ${turn.number}`));
  const oldest = state.done && state.snaps[state.snaps.length - 1]?.id === snap.id;
  let body;
  try {
    body = oldest
      ? [oldestNote(snap)]
      : await changeView(`${snap.id}~1`, snap.id, { files: true });
  } catch (error) {
    body = [el("p", { class: "empty" }, `No change to show: ${error.message}`)];
  }
  return [...head, actions, ...body];
}

function oldestNote(snap) {
  const files = `${snap.files_changed} file${snap.files_changed === 1 ? "" : "s"}`;
  return el(
    "p",
    { class: "empty" },
    `The oldest snapshot kept: nothing earlier to compare it with here. When it was recorded, ${files} changed ` +
      `(+${snap.additions} −${snap.deletions}) against the folder before it. Pick it and a later one to compare them.`,
  );
}

async function compareView(a, b) {
  return [
    el("h2", {}, "from ", el("code", {}, short(a.id)), " to ", el("code", {}, short(b.id))),
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", onclick: () => restore(a, null) }, `Restore ${short(a.id)}…`),
      el("button", { type: "button", onclick: () => restore(b, null) }, `Restore ${short(b.id)}…`),
    ),
    ...(await changeView(a.id, b.id, {})),
  ];
}

async function turnView(turn) {
  const session = turn.lane;
  const hunks = await read("turn", { pre: turn.pre.id, session });
  const head = [
    el("h2", {}, `turn ${turn.number}: `, el("span", { class: "prompt" }, firstLine(turn.pre.message) || "(no prompt)")),
    el("p", { class: "meta" }, `${laneName(session)} · its own changes (its tool calls), as revert takes them back`),
    el(
      "div",
      { class: "actions" },
      hunks.every((hunk) => state.reverted.has(hunk.id))
        ? null
        : el("button", { type: "button", class: "danger", onclick: () => revertTurn(turn, null, hunks) }, "Revert this turn…"),
    ),
  ];
  const byPath = group(hunks);
  const files = [...byPath.keys()].map((path) => {
    const parts = byPath.get(path);
    // A turn that leaves no line of the file (it deleted or emptied it): nothing there to blame.
    const gone = parts.every((hunk) => hunk.kind === "lines" && hunk.new_start === 0 && hunk.new_lines === 0);
    return fileSection({ path, status: gone ? "no lines left" : undefined, blameable: !gone }, parts, (hunk) => revertTurn(turn, hunk), false);
  });
  return [...head, ...(files.length ? files : [el("p", { class: "empty" }, "The turn changed nothing.")])];
}

async function changeView(from, to, { files }) {
  const [diffs, hunks] = await Promise.all([read("diff", { from, to }), read("hunks", { from, to })]);
  if (!diffs.length) return [el("p", { class: "empty" }, "No file changed.")];
  const byPath = group(hunks);
  const sections = el("div", { class: "files" });
  const cost = (diff) => 1 + (byPath.get(diff.path) || []).reduce((sum, hunk) => sum + patchLines(hunk), 0);
  const draw = (diff) =>
    sections.append(fileSection(diff, byPath.get(diff.path) || [], (hunk) => revertHunk(from, to, hunk), files));
  return [sections, paged(diffs, draw, cost, "files")].filter(Boolean);
}

function group(hunks) {
  const byPath = new Map();
  for (const hunk of hunks) {
    if (!byPath.has(hunk.path)) byPath.set(hunk.path, []);
    byPath.get(hunk.path).push(hunk);
  }
  return byPath;
}

function fileSection(diff, hunks, onRevert, tickable) {
  const notes = [];
  if (diff.status) notes.push(el("span", { class: `status ${diff.status.split(" ")[0]}` }, diff.status.replace("_", " ")));
  if (diff.binary) notes.push(el("span", { class: "note" }, "binary"));
  if (diff.old_mode === "120000" || diff.new_mode === "120000") notes.push(el("span", { class: "note" }, "symlink"));
  if (diff.old_mode && diff.new_mode && diff.old_mode !== diff.new_mode) {
    notes.push(el("span", { class: "note" }, `mode ${diff.old_mode} → ${diff.new_mode}`));
  }
  if (diff.additions !== undefined && !diff.binary) {
    notes.push(el("span", { class: "plus" }, `+${diff.additions}`), el("span", { class: "minus" }, `−${diff.deletions}`));
  }
  const header = el(
    "div",
    { class: "file-head" },
    tickable ? el("input", { type: "checkbox", class: "restore-file", value: diff.path, title: "restore this file" }) : null,
    el("code", { class: "path" }, diff.path),
    ...notes,
  );
  const section = el("section", { class: "file", "data-path": diff.path }, header);
  if (diff.status !== "deleted" && diff.blameable !== false) {
    header.append(el("button", { type: "button", class: "small blame", onclick: () => blameFrom(section, diff.path) }, "blame"));
  }
  const target = symlinkTargets(diff);
  if (target) section.append(el("p", { class: "note-line" }, target));
  if (diff.binary) section.append(el("p", { class: "note-line" }, "Binary file: no lines to show."));
  const more = paged(hunks, (hunk) => section.append(hunkBlock(hunk, onRevert)), patchLines, "hunks of this file");
  if (more) section.append(more);
  if (section.childElementCount === 1) {
    section.append(el("p", { class: "note-line" }, diff.status === "deleted" ? "Deleted." : "No line changes."));
  }
  return section;
}

async function blameFrom(section, path) {
  // Blame replaces the view only when there is one to show; a refusal is said in the file's own section.
  section.querySelector(":scope > .failure")?.remove();
  let found;
  try {
    found = await read("blame", { path });
  } catch (error) {
    section.querySelector(".file-head").after(failure(`No blame: ${error.message}`));
    return;
  }
  show(async () => blameView(found));
}

function symlinkTargets(diff) {
  // A symlink's patch holds its target as its one line: "points to X", "pointed to X", or both.
  if (!diff.patch || (diff.old_mode !== "120000" && diff.new_mode !== "120000")) return null;
  const lines = diff.patch.split("\n").filter((line) => !line.startsWith("+++") && !line.startsWith("---"));
  const old = lines.find((line) => line.startsWith("-"));
  const now = lines.find((line) => line.startsWith("+"));
  const parts = [];
  if (old !== undefined && diff.old_mode === "120000") parts.push(`pointed to ${old.slice(1)}`);
  if (now !== undefined && diff.new_mode === "120000") parts.push(`points to ${now.slice(1)}`);
  return parts.length ? `symlink: ${parts.join("; now ")}` : null;
}

function hunkBlock(hunk, onRevert) {
  const done = state.reverted.get(hunk.id);
  const revert = done
    ? el("span", { class: "reverted-note", title: "reverted from this page; undo or the safety snapshot brings it back" }, `reverted at ${done}`)
    : el(
        "button",
        { type: "button", class: "small revert-hunk", "data-hunk": hunk.id, onclick: () => onRevert(hunk) },
        "Revert this hunk…",
      );
  const lines = hunk.patch.replace(/\n$/, "").split("\n");
  const header = hunk.kind === "lines" ? lines.shift() : lines.join("; "); // a mode or whole-file hunk: its words
  const body = hunk.kind === "lines" ? sideBySide(hunk, lines) : [];
  const head = el("div", { class: "hunk-head" }, el("code", {}, header), revert);
  const block = el("div", { class: `hunk${done ? " reverted" : ""}`, "data-hunk": hunk.id }, head);
  for (const part of body) block.append(part);
  return block;
}

function sideBySide(hunk, lines) {
  // Context on both sides; a run of removed lines faces the run of added lines after it.
  // Each side scrolls on its own (code is never wrapped); rows are one line high, so they stay level.
  const rows = []; // [left number, left text, left kind, right number, right text, right kind]
  let left = hunk.old_start;
  let right = hunk.new_start;
  let removed = [];
  let added = [];
  const flush = () => {
    for (let i = 0; i < Math.max(removed.length, added.length); i++) {
      const a = removed[i];
      const b = added[i];
      rows.push([a === undefined ? "" : left++, a, a === undefined ? "empty" : "del", b === undefined ? "" : right++, b, b === undefined ? "empty" : "add"]);
    }
    removed = [];
    added = [];
  };
  for (const line of lines) {
    const mark = line[0];
    const text = line.slice(1);
    if (mark === "-") removed.push(text);
    else if (mark === "+") added.push(text);
    else if (mark === "\\") {
      flush();
      rows.push(["", line, "no-newline", "", line, "no-newline"]);
    } else {
      flush();
      rows.push([left++, text, "same", right++, text, "same"]);
    }
  }
  flush();
  const old = el("tbody");
  const now = el("tbody");
  const draw = ([leftNo, leftText, leftKind, rightNo, rightText, rightKind]) => {
    old.append(row(leftNo, leftText, leftKind));
    now.append(row(rightNo, rightText, rightKind));
  };
  const more = paged(rows, draw, () => 1, "lines of this hunk");
  const side = (body, name) => el("div", { class: `side ${name}` }, el("table", { class: "side-lines" }, body));
  return [el("div", { class: "sides" }, side(old, "old"), side(now, "new")), more].filter(Boolean);
}

function row(number, text, kind) {
  return el("tr", {}, el("td", { class: "no" }, number), el("td", { class: `text ${kind}` }, text ?? ""));
}

function blameView(found) {
  const origins = new Map();
  const table = el("tbody");
  const byLine = new Map();
  for (const run of found.runs) for (let k = 0; k < run.count; k++) byLine.set(run.start + k, run.origin);
  const numbered = found.lines.map((text, index) => [text, index]);
  const draw = ([text, index]) => {
    const origin = byLine.get(index + 1) || { who: "unknown" };
    const key = origin.who === "session" ? origin.session || PERSON : `(${origin.who})`;
    const who = origin.who === "session" ? `${laneName(origin.session || PERSON)}${origin.turn ? ` turn ${origin.turn}` : ""}` : origin.who === "workspace" ? "not snapshotted" : origin.who;
    const line = el(
      "tr",
      { class: `blame ${origin.who}` },
      el("td", { class: "who" }, who),
      el("td", { class: "no" }, index + 1),
      el("td", { class: "text" }, text),
    );
    if (origin.who === "session") line.style.setProperty("--lane", laneColor(origin.session || PERSON));
    table.append(line);
  };
  for (const run of found.runs) {
    const origin = run.origin;
    const key = origin.who === "session" ? origin.session || PERSON : `(${origin.who})`;
    if (!origins.has(key)) origins.set(key, origin.who === "session" ? laneName(key) : origin.who === "workspace" ? "not snapshotted" : origin.who);
  }
  const more = paged(numbered, draw, () => 1, "lines");
  const legend = el("p", { class: "legend" }, el("span", { class: "legend-title" }, "colour by session:"));
  for (const [key, name] of origins) {
    const chip = el("span", { class: "chip" }, name);
    if (!key.startsWith("(")) chip.style.setProperty("--lane", laneColor(key));
    legend.append(chip);
  }
  return [
    el("h2", {}, "blame ", el("code", {}, found.path)),
    el("p", { class: "meta" }, `${found.depth} snapshots read${found.limited ? `; stopped at the limit of ${found.limit}` : ""}`),
    legend,
    el("div", { class: "blame-scroll" }, el("table", { class: "blame-lines" }, table)),
    more,
  ].filter(Boolean);
}

function chosenFiles() {
  return [...document.querySelectorAll("input.restore-file:checked")].map((box) => box.value);
}

// -- actions: a dry run, a confirmation showing it, then the change -------------------------

function confirmWith(title, plan, ready) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-plan").replaceChildren(...plan);
  const ok = document.getElementById("confirm-ok");
  ok.disabled = !ready;
  return new Promise((resolve) => {
    const done = (value) => {
      ok.onclick = null;
      document.getElementById("confirm-cancel").onclick = null;
      dialog.close();
      resolve(value);
    };
    ok.onclick = () => done(true);
    document.getElementById("confirm-cancel").onclick = () => done(false);
    dialog.oncancel = () => done(false);
    dialog.showModal();
  });
}

function pathList(heading, paths, kind) {
  if (!paths.length) return null;
  return el("div", { class: `plan-part ${kind}` }, el("h3", {}, heading), el("ul", {}, ...paths.map((path) => el("li", {}, el("code", {}, path)))));
}

function restorePlan(plan) {
  return [
    pathList(`write ${plan.written_paths.length}`, plan.written_paths, "write"),
    pathList(`delete ${plan.deleted_paths.length}`, plan.deleted_paths, "delete"),
    pathList("keep, not tracked now (left as they are)", plan.kept.map((kept) => `${kept.path} (${kept.reason})`), "keep"),
    el("p", {}, `${plan.unchanged} already so. A safety snapshot is taken first: undo takes it back.`),
  ].filter(Boolean);
}

function revertPlan(plan, hunk) {
  return [
    hunk ? el("pre", { class: "patch" }, hunk.patch) : null,
    pathList("take back", plan.reverted, "write"),
    pathList("merge with later edits", plan.merged, "write"),
    pathList("conflicts (nothing is written while there are any)", plan.conflicts.map((c) => `${c.path} (${c.reason})`), "delete"),
    pathList("already so", plan.unchanged, "keep"),
    el("p", {}, "A safety snapshot is taken first: restoring it takes this back."),
  ].filter(Boolean);
}

async function act(title, name, body, planOf, hunk, taken = []) {
  let plan;
  try {
    plan = await change(name, { ...body, dry_run: true });
  } catch (error) {
    if (!error.result) return report(error.message, true);
    await confirmWith(title, [failure(error.message), ...planOf(error.result, hunk)], false);
    return;
  }
  const ready = !plan.conflicts || plan.conflicts.length === 0;
  if (!(await confirmWith(title, planOf(plan, hunk), ready))) return;
  let outcome = [`${title}: done`, false];
  try {
    await change(name, { ...body, dry_run: false });
    const [time] = when(new Date().toISOString());
    for (const id of hunk ? [hunk.id] : taken) state.reverted.set(id, time);
  } catch (error) {
    outcome = [error.message, true];
  }
  await loadNewer();
  if (state.view) await show(state.view);
  report(...outcome);
}

function report(message, bad) {
  const line = el("p", { class: bad ? "failure" : "done", role: "status" }, message);
  document.getElementById("detail").prepend(line);
}

function restore(snap, files) {
  if (files !== null && !files.length) return report("Tick the files to restore first.", true);
  const title = files ? `Restore ${files.length} file(s) from ${short(snap.id)}` : `Restore the folder to ${short(snap.id)}`;
  return act(title, "restore", { ref: snap.id, paths: files || [] }, restorePlan);
}

function revertHunk(from, to, hunk) {
  return act(`Revert one hunk of ${hunk.path}`, "revert", { before: from, after: to, hunks: [hunk.id] }, revertPlan, hunk);
}

function revertTurn(turn, hunk, all = []) {
  // The turn is named by its pre-turn snapshot (whose session says whose turn it is); what the
  // revert writes is the person's, in the person's lane: no session is sent.
  const body = { pre: turn.pre.id, hunks: hunk ? [hunk.id] : [] };
  const title = hunk ? `Revert one hunk of turn ${turn.number}` : `Revert turn ${turn.number}`;
  return act(title, "revert-turn", body, revertPlan, hunk, all.map((one) => one.id));
}

async function pin(snap) {
  const plan = [el("p", {}, "Retention will keep this snapshot whatever its policy says. Nothing in the folder is written.")];
  if (!(await confirmWith(`Pin ${short(snap.id)}`, plan, true))) return;
  try {
    await change("pin", { ref: snap.id });
    report(`pinned ${short(snap.id)}`, false);
  } catch (error) {
    report(error.message, true);
  }
}

// -- live updates ------------------------------------------------------------------------------

function listen() {
  const live = document.getElementById("live");
  const events = new EventSource(`/events?token=${encodeURIComponent(TOKEN)}`);
  events.addEventListener("snapshot", (event) => {
    live.textContent = "live";
    live.className = "live on";
    const { newest } = JSON.parse(event.data);
    if (newest && !state.byId.has(newest)) loadNewer();
  });
  events.onerror = () => {
    live.textContent = "reconnecting";
    live.className = "live";
  };
}

async function start() {
  document.getElementById("more").addEventListener("click", loadOlder);
  document.getElementById("timeline").addEventListener("scroll", hiddenLanes, { passive: true });
  window.addEventListener("resize", hiddenLanes);
  await loadOlder();
  listen();
  read("sessions")
    .then(({ sessions }) => {
      for (const found of sessions) if (found.agent) state.agents.set(found.name, found.agent);
      drawTimeline();
    })
    .catch(() => {})
    .finally(() => {
      document.body.dataset.settled = "1";
    });
}

start().catch((error) => document.getElementById("detail").replaceChildren(failure(error.message)));
