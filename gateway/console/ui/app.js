// robot-gateway operator console. Plain ES modules (Preact + htm, uPlot), no build step.
// Every data call goes to /v1/admin/* with the operator token as a Bearer header.
import { h, render } from "preact";
import { useEffect, useRef, useState, useCallback } from "preact/hooks";
import htm from "htm";
import uPlot from "uplot";

const html = htm.bind(h);
const TOKEN_KEY = "robot-gateway-operator-token";

class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

async function api(token, path, opts = {}) {
  const res = await fetch(path, {
    method: opts.method ?? "GET",
    headers: {
      authorization: `Bearer ${token}`,
      ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  if (opts.raw) {
    if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
    return res;
  }
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

// ------------------------------------------------------------------ login
function Login({ onToken }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState("");
  const submit = async (e) => {
    e.preventDefault();
    setError("");
    try {
      await api(value.trim(), "/v1/admin/state");
      sessionStorage.setItem(TOKEN_KEY, value.trim());
      onToken(value.trim());
    } catch (err) {
      setError(
        err.code === "RB_ERR_FORBIDDEN"
          ? "This is the agent token: the console needs the operator token."
          : err.code === "RB_ERR_UNAUTHORIZED"
            ? "Unknown token."
            : err.message,
      );
    }
  };
  return html`<form class="panel login" onSubmit=${submit} data-testid="login">
    <h2>robot-gateway console</h2>
    <p>Log in with the gateway's <b>operator</b> token (printed by <code>robot-gateway serve</code>).</p>
    <input type="password" name="token" placeholder="operator token" value=${value}
      onInput=${(e) => setValue(e.currentTarget.value)} autofocus />
    <button type="submit">Log in</button>
    ${error && html`<p class="error" data-testid="login-error">${error}</p>`}
  </form>`;
}

// ------------------------------------------------------------------ live stream
function useLive(token, onAuthLost) {
  const [state, setState] = useState(null);
  const [connected, setConnected] = useState(false);
  useEffect(() => {
    let alive = true;
    let controller;
    const run = async () => {
      while (alive) {
        controller = new AbortController();
        try {
          const res = await fetch("/v1/admin/live?hz=10", {
            headers: { authorization: `Bearer ${token}` },
            signal: controller.signal,
          });
          if (res.status === 401 || res.status === 403) return onAuthLost();
          if (!res.ok || !res.body) throw new Error(`live: HTTP ${res.status}`);
          setConnected(true);
          const reader = res.body.getReader();
          const dec = new TextDecoder();
          let buf = "";
          let lastLine = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += dec.decode(value, { stream: true });
            let nl;
            while ((nl = buf.indexOf("\n")) >= 0) {
              const line = buf.slice(0, nl);
              buf = buf.slice(nl + 1);
              // an unchanged state (nothing moves, no episode clock) is not drawn again
              if (line && line !== lastLine) setState(JSON.parse(line));
              lastLine = line;
            }
          }
        } catch {
          /* reconnect below */
        }
        setConnected(false);
        if (alive) await new Promise((r) => setTimeout(r, 1000));
      }
    };
    run();
    return () => {
      alive = false;
      controller?.abort();
    };
  }, [token]);
  return { state, connected };
}

// ------------------------------------------------------------------ cameras
function Camera({ token, cam, overlay, twin = false, periodMs = 200, depthToggle = true }) {
  const [url, setUrl] = useState(null);
  const [depth, setDepth] = useState(false);
  const [err, setErr] = useState("");
  const canvas = useRef(null);
  useEffect(() => {
    let alive = true;
    let last;
    // the id of the image shown: the gateway answers 204 while it has no newer one
    let have;
    const loop = async () => {
      while (alive) {
        // the gateway says when it may capture afresh (its capture budget): no sooner asking
        let waitMs = periodMs;
        try {
          const name = encodeURIComponent(cam.name);
          const q = have !== undefined ? `have=${have}` : "";
          const res = await api(
            token,
            twin
              ? `/v1/admin/twin/cameras/${name}/image?${q}`
              : `/v1/admin/cameras/${name}/image?depth=${depth ? 1 : 0}&${q}`,
            { raw: true },
          );
          waitMs = Math.max(periodMs, Math.min(5000, Number(res.headers.get("x-next-ms")) || 0));
          if (res.status === 200) {
            const u = URL.createObjectURL(await res.blob());
            if (!alive) return URL.revokeObjectURL(u);
            have = Number(res.headers.get("x-image-id"));
            setUrl(u);
            if (last) URL.revokeObjectURL(last);
            last = u;
          }
          setErr("");
        } catch (e) {
          setErr(e.message);
        }
        await new Promise((r) => setTimeout(r, waitMs));
      }
    };
    loop();
    return () => {
      alive = false;
    };
  }, [token, cam.name, depth, twin]);
  // the path only grows: redraw when its length or last point changed, not on every live state
  const last = overlay?.[overlay.length - 1];
  const overlayKey = overlay ? `${overlay.length}:${last?.[0]}:${last?.[1]}` : "";
  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    const ctx = c.getContext("2d");
    ctx.clearRect(0, 0, c.width, c.height);
    if (!overlay || overlay.length < 2) return;
    ctx.strokeStyle = "#00e5ff";
    ctx.lineWidth = 2;
    ctx.beginPath();
    overlay.forEach(([u, v], i) => {
      if (i) ctx.lineTo(u, v);
      else ctx.moveTo(u, v);
    });
    ctx.stroke();
    const [u, v] = overlay[overlay.length - 1];
    ctx.fillStyle = "#00e5ff";
    ctx.beginPath();
    ctx.arc(u, v, 4, 0, 2 * Math.PI);
    ctx.fill();
  }, [overlayKey]);
  const id = `${twin ? "twin-" : ""}camera-${cam.name}`;
  return html`<div class="cam" data-testid=${id}>
    <div class="label"><span>${twin ? "twin · " : ""}${cam.name} ${cam.width}×${cam.height}</span>
      ${!twin && depthToggle && cam.depth && html`<label><input type="checkbox" checked=${depth} onChange=${(e) => setDepth(e.currentTarget.checked)} /> depth</label>`}
    </div>
    <div style="position:relative">
      ${url ? html`<img src=${url} alt=${`${twin ? "twin " : ""}${cam.name}`} data-testid=${`${twin ? "twin-" : ""}camera-img-${cam.name}`} />` : html`<div style=${`aspect-ratio:${cam.width}/${cam.height}`}></div>`}
      <canvas ref=${canvas} width=${cam.width} height=${cam.height}></canvas>
    </div>
    ${err && html`<div class="error">${err}</div>`}
  </div>`;
}

// ------------------------------------------------------------------ live panels
const pct = (x, lo, hi) => `${Math.max(0, Math.min(100, ((x - lo) / (hi - lo)) * 100))}%`;

function Joints({ s }) {
  return html`<div class="panel" data-testid="joints"><h2>Joints (position in band · velocity vs limit)</h2>
    ${s.joints.map((j) => {
      const vShare = Math.abs(j.dq) / j.max_velocity;
      return html`<div class="joint">
        <span>${j.name}</span>
        <div><div class="bar"><span style=${`left:${pct(j.q, j.lower, j.upper)}`}></span></div>
          <small data-testid=${`joint-q-${j.name}`}>${j.q.toFixed(3)} rad [${j.lower.toFixed(2)}, ${j.upper.toFixed(2)}]</small></div>
        <div><div class=${`bar v ${vShare > 0.8 ? "hot" : ""}`}><span style=${`width:${Math.min(100, vShare * 100)}%`}></span></div>
          <small>${j.dq.toFixed(3)} / ${j.max_velocity.toFixed(2)} rad/s</small></div>
      </div>`;
    })}
    <div class="joint"><span>tool</span>
      <div><div class=${`bar v ${s.tool.speed_mps > 0.8 * s.tool.max_speed_mps ? "hot" : ""}`}><span style=${`width:${Math.min(100, (s.tool.speed_mps / s.tool.max_speed_mps) * 100)}%`}></span></div>
        <small data-testid="tool-speed">${s.tool.speed_mps.toFixed(3)} / ${s.tool.max_speed_mps} m/s</small></div>
      <small>gripper ${(s.gripper_width_m * 1000).toFixed(1)} mm</small></div>
  </div>`;
}

function Events({ title, list, testid }) {
  return html`<div class="panel"><h2>${title}</h2><div class="events" data-testid=${testid}>
    ${list.length === 0 ? html`<div style="color:var(--dim)">none</div>` : [...list].reverse().map((e) => html`<div>${e.episode ? `${e.episode} · ` : ""}${e.t.toFixed(3)} s · ${e.kind} · ${e.message}</div>`)}
  </div></div>`;
}

function Live({ token, s }) {
  if (!s) return html`<main><div class="panel">connecting…</div></main>`;
  const ep = s.episode;
  const progress = ep?.progress;
  return html`<main data-testid="live">
    <div class="panel"><h2>Cameras</h2><div class="cams">
      ${s.cameras.map((c) => html`<${Camera} key=${c.name} token=${token} cam=${c} overlay=${s.tool_path_px[c.name]} />`)}
    </div></div>
    ${s.twin && html`<${TwinPanel} token=${token} s=${s} />`}
    <div class="row">
      <${Joints} s=${s} />
      <div style="display:grid;gap:12px">
        <div class="panel" data-testid="buzzbox"><h2>Buzz box</h2>
          <span class=${`lamp ${s.buzzbox.lamp ? "on" : ""}`}></span>
          contact <b data-testid="contact">${s.buzzbox.contact ? "CLOSED" : "open"}</b>${s.buzzbox.source ? ` (${s.buzzbox.source})` : ""}
          ${" · lamp "}<span data-testid="lamp">${s.buzzbox.lamp ? "on" : "off"}</span>
          ${Object.entries(s.buzzbox.links).map(
            ([d, up]) =>
              html` · <span class=${up ? "" : "error"} data-testid=${`link-${d}`}>${d} link ${up ? "up" : "DOWN"}</span>`,
          )}
        </div>
        <div class="panel" data-testid="progress"><h2>Progress (operator only)</h2>
          ${
            progress
              ? html`<div class="bar v"><span style=${`width:${progress.progress * 100}%`}></span></div>
            ${(progress.progress * 100).toFixed(1)} %${progress.quantised !== undefined ? ` · quantised ${(progress.quantised * 100).toFixed(0)} %` : ""}`
              : "no episode"
          }
        </div>
        <${Events} title="Safety" list=${s.safety_events} testid="safety-events" />
      </div>
      <${Events} title="Sensor events" list=${s.sensor_events} testid="sensor-events" />
    </div>
  </main>`;
}

// ------------------------------------------------------------------ shadow twin
const mrad = (v) => (v * 1000).toFixed(2);
const fx = (v, d = 2) => (v === null || v === undefined ? "n/a" : v.toFixed(d));
const maxOf = (v) => Math.max(...v);

/** Divergence figures of the last chunk and the trial so far, one column each. */
function DivergenceTable({ d }) {
  const cols = [
    [d.chunk ? `chunk ${d.chunk.chunk} (${d.chunk.kind})` : "chunk", d.chunk],
    [`trial (${d.chunks} chunks)`, d.trial],
  ];
  const cams = [...new Set(cols.flatMap(([, f]) => (f ? f.images.map((i) => i.camera) : [])))];
  const row = (label, key, f) =>
    html`<tr><th>${label}</th>${cols.map(([, c]) => html`<td data-testid=${`div-${key}`}>${c ? f(c) : "–"}</td>`)}</tr>`;
  return html`<table class="divergence" data-testid="divergence">
    <tr><th></th>${cols.map(([l]) => html`<th>${l}</th>`)}</tr>
    ${row("samples", "samples", (c) => c.samples)}
    ${row("joint RMS, max over joints (mrad)", "joint-rms", (c) => mrad(maxOf(c.joint_rms_rad)))}
    ${row("joint max, max over joints (mrad)", "joint-max", (c) => mrad(maxOf(c.joint_max_rad)))}
    ${row("tool path rms / max / final (mm)", "tool", (c) => `${fx(c.tool_mm.rms)} / ${fx(c.tool_mm.max)} / ${fx(c.tool_mm.final)}`)}
    ${row("contacts real / twin / matched", "contacts", (c) => `${c.contacts.real} / ${c.contacts.twin} / ${c.contacts.matched}`)}
    ${row("predicted not seen / seen not predicted", "contacts-miss", (c) => `${c.contacts.predicted_not_seen} / ${c.contacts.seen_not_predicted}`)}
    ${row("progress real / twin (Δ)", "progress", (c) => (c.progress ? `${fx(c.progress.real, 3)} / ${fx(c.progress.twin, 3)} (${fx(c.progress.diff, 3)})` : "n/a"))}
    ${cams.map((cam) =>
      row(`image ${cam}: wire IoU / arm IoU / |ΔRGB|`, `image-${cam}`, (c) => {
        const i = c.images.find((x) => x.camera === cam);
        return i
          ? `${fx(i.wire_iou, 3)} / ${fx(i.arm_iou, 3)} / ${fx(i.mean_abs_rgb, 1)} (${i.frames} fr.)`
          : "–";
      }),
    )}
  </table>`;
}

/** Sim and real side by side: the bench's camera and the twin's render of it, and the divergence. */
function TwinPanel({ token, s }) {
  const [name, setName] = useState(s.cameras[0]?.name ?? "");
  const cam = s.cameras.find((c) => c.name === name) ?? s.cameras[0];
  return html`<div class="panel" data-testid="twin"><h2>Shadow twin: bench and twin side by side</h2>
    <label>camera <select name="twin-camera" value=${cam?.name} onChange=${(e) => setName(e.currentTarget.value)}>
      ${s.cameras.map((c) => html`<option value=${c.name}>${c.name}</option>`)}</select></label>
    ${
      cam &&
      html`<div class="cams pair">
      <${Camera} key=${`b-${cam.name}`} token=${token} cam=${cam} overlay=${null} depthToggle=${false} />
      <${Camera} key=${`t-${cam.name}`} token=${token} cam=${cam} overlay=${null} twin=${true} periodMs=${400} />
    </div>`
    }
    <${DivergenceTable} d=${s.twin} />
  </div>`;
}

// ------------------------------------------------------------------ episodes
function ProgressPlot({ episodes }) {
  const el = useRef(null);
  const plot = useRef(null);
  const ended = episodes.filter(
    (e) => e.status === "ended" && e.result && typeof e.result.progress === "number",
  );
  const xs = ended.map((_, i) => i + 1);
  const ys = ended.map((e) => e.result.progress * 100);
  const qs = ended.map((e) =>
    typeof e.result.progress_quantised === "number" ? e.result.progress_quantised * 100 : null,
  );
  useEffect(() => {
    if (!el.current) return;
    const data = [xs, ys, qs];
    if (!plot.current) {
      plot.current = new uPlot(
        {
          width: 640,
          height: 220,
          scales: { x: { time: false }, y: { range: [0, 100] } },
          axes: [
            { stroke: "#8a94a3", label: "trial", incrs: [1, 2, 5, 10, 20, 50, 100] },
            { stroke: "#8a94a3", label: "progress %" },
          ],
          series: [
            {},
            { label: "progress", stroke: "#3fb950", points: { show: true, size: 7 } },
            { label: "quantised", stroke: "#d29922", points: { show: true, size: 5 } },
          ],
        },
        data,
        el.current,
      );
    } else plot.current.setData(data);
  }, [JSON.stringify(ys), JSON.stringify(qs)]);
  useEffect(() => () => plot.current?.destroy(), []);
  return html`<div class="panel" data-testid="progress-plot"><h2>Progress per trial (${ended.length} ended)</h2><div ref=${el}></div></div>`;
}

function Episodes({ token, s }) {
  const [episodes, setEpisodes] = useState([]);
  const [tasks, setTasks] = useState([]);
  const [form, setForm] = useState({ task: "", seed: 1, level: "" });
  const [msg, setMsg] = useState("");
  const [grades, setGrades] = useState({});
  const refresh = useCallback(async () => {
    try {
      setEpisodes((await api(token, "/v1/admin/episodes")).episodes);
    } catch (e) {
      setMsg(e.message);
    }
  }, [token]);
  useEffect(() => {
    api(token, "/v1/admin/tasks").then((r) => {
      setTasks(r.tasks);
      if (r.tasks[0])
        setForm((f) => ({ ...f, task: f.task || r.tasks[0].id, level: f.level || r.tasks[0].default_level }));
    });
    refresh();
    const t = setInterval(refresh, 2000);
    return () => clearInterval(t);
  }, [token]);
  const task = tasks.find((t) => t.id === form.task);
  const start = async (e) => {
    e.preventDefault();
    setMsg("");
    try {
      const ep = await api(token, "/v1/admin/episodes", {
        method: "POST",
        body: { task: form.task, seed: Number(form.seed), ...(form.level ? { level: form.level } : {}) },
      });
      setMsg(`started ${ep.id}`);
      refresh();
    } catch (err) {
      setMsg(`${err.code ?? ""} ${err.message}`);
    }
  };
  const end = async () => {
    const cur = s?.episode;
    if (!cur) return;
    try {
      await api(token, `/v1/admin/episodes/${cur.id}/end`, {
        method: "POST",
        body: { reason: "aborted", detail: "ended from the console" },
      });
      refresh();
    } catch (err) {
      setMsg(`${err.code ?? ""} ${err.message}`);
    }
  };
  const download = async (id) => {
    try {
      const res = await api(token, `/v1/admin/episodes/${id}/record`, { raw: true });
      const a = document.createElement("a");
      a.href = URL.createObjectURL(await res.blob());
      a.download = `${id}.mcap`;
      a.click();
    } catch (err) {
      setMsg(`${err.code ?? ""} ${err.message}`);
    }
  };
  const grade = async (id) => {
    try {
      const g = await api(token, `/v1/admin/episodes/${id}/grade`);
      setGrades((m) => ({ ...m, [id]: g.agree ? "agrees" : `DISAGREES (${g.differences.length})` }));
    } catch (err) {
      setGrades((m) => ({ ...m, [id]: `${err.code ?? "error"}` }));
    }
  };
  return html`<main data-testid="episodes">
    <div class="panel"><h2>Start an episode</h2>
      <form class="start" onSubmit=${start}>
        <label>task<select name="task" value=${form.task} onChange=${(e) => setForm({ ...form, task: e.currentTarget.value, level: "" })}>
          ${tasks.map((t) => html`<option value=${t.id}>${t.id}</option>`)}</select></label>
        <label>level<select name="level" value=${form.level} onChange=${(e) => setForm({ ...form, level: e.currentTarget.value })}>
          <option value="">(default)</option>${(task?.levels ?? []).map((l) => html`<option value=${l}>${l}</option>`)}</select></label>
        <label>seed<input name="seed" type="number" min="0" value=${form.seed} onInput=${(e) => setForm({ ...form, seed: e.currentTarget.value })} /></label>
        <button type="submit" data-testid="start-episode">Start</button>
        <button type="button" onClick=${end} disabled=${s?.episode?.status !== "running"} data-testid="end-episode">End current</button>
        <span data-testid="episode-msg">${msg}</span>
      </form>
    </div>
    <${ProgressPlot} episodes=${episodes} />
    <div class="panel"><h2>Episodes</h2><table data-testid="episode-table">
      <tr><th>id</th><th>task</th><th>level</th><th>seed</th><th>status</th><th>reason</th><th>progress</th><th>record</th><th>grade</th></tr>
      ${[...episodes].reverse().map(
        (e) => html`<tr>
        <td>${e.id.slice(0, 8)}</td><td>${e.task}</td><td>${e.level}</td><td>${e.seed}</td><td>${e.status}</td><td>${e.reason ?? ""}</td>
        <td>${e.result && typeof e.result.progress === "number" ? `${(e.result.progress * 100).toFixed(1)} %` : ""}</td>
        <td>${e.record_path && e.status === "ended" ? html`<button onClick=${() => download(e.id)}>download</button>` : ""}</td>
        <td>${e.status === "ended" ? html`<button onClick=${() => grade(e.id)}>grade</button> ${grades[e.id] ?? ""}` : ""}</td>
      </tr>`,
      )}
    </table></div>
  </main>`;
}

// ------------------------------------------------------------------ shell
function Console({ token, onLogout }) {
  const [view, setView] = useState("live");
  const { state: s, connected } = useLive(token, onLogout);
  const [busy, setBusy] = useState(false);
  const engaged = !!s?.estop?.engaged;
  const estop = useCallback(async () => {
    setBusy(true);
    try {
      await api(token, "/v1/admin/estop", { method: "POST", body: { reason: "console" } });
    } finally {
      setBusy(false);
    }
  }, [token]);
  const release = async () => {
    await api(token, "/v1/admin/release", { method: "POST" });
  };
  useEffect(() => {
    // Escape engages the e-stop from anywhere on the page
    const onKey = (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        estop();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [estop]);
  const ep = s?.episode;
  return html`<div>
    <header>
      <h1>robot-gateway</h1>
      <span class="status" data-testid="bench-status">${s ? `${s.bench} · ${s.backend.kind} (${s.backend.lifecycle})` : "…"} ${connected ? "" : "· reconnecting"}</span>
      <span class="status" data-testid="episode-status">${ep ? `${ep.task} seed ${ep.seed} · ${ep.status}${ep.reason ? ` (${ep.reason})` : ""} · t ${ep.t.toFixed(2)} s · ${ep.time_left_s.toFixed(1)} s left` : "no episode"}</span>
      <nav>
        <button class=${view === "live" ? "active" : ""} onClick=${() => setView("live")}>Live</button>
        <button class=${view === "episodes" ? "active" : ""} onClick=${() => setView("episodes")}>Episodes</button>
        <button onClick=${onLogout}>Log out</button>
      </nav>
      <button id="estop" class=${engaged ? "engaged" : ""} onClick=${estop} disabled=${busy} data-testid="estop" title="E-stop (Esc)">
        ${engaged ? "E-STOP ENGAGED" : "E-STOP (Esc)"}</button>
      <button id="release" onClick=${release} disabled=${!engaged} data-testid="release">Release</button>
    </header>
    ${view === "live" ? html`<${Live} token=${token} s=${s} />` : html`<${Episodes} token=${token} s=${s} />`}
  </div>`;
}

function App() {
  const [token, setToken] = useState(sessionStorage.getItem(TOKEN_KEY));
  const logout = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    setToken(null);
  };
  return token
    ? html`<${Console} token=${token} onLogout=${logout} />`
    : html`<${Login} onToken=${setToken} />`;
}

render(html`<${App} />`, document.getElementById("root"));
