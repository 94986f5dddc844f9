/**
 * Test helpers for reports: a strict little XML well-formedness check (balanced tags, quoted
 * attributes, no bare `<` or `&`) and a synthetic run shaped like the published buzz-wire
 * demonstration (eight trials, scores in 20 % steps). Not used by production code.
 */
import { summarize, RUN_REPORT_FORMAT, type RunReport, type TrialRecord } from "./types.ts";

const BAD_AMP = /&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/;
const TAG = /^<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>/;

/** Throw with the position of the first problem unless `s` is one well-formed XML element. */
export function assertWellFormedXml(s: string): void {
  const stack: string[] = [];
  let roots = 0;
  let i = 0;
  for (;;) {
    const lt = s.indexOf("<", i);
    const text = s.slice(i, lt < 0 ? s.length : lt);
    if (BAD_AMP.test(text)) throw new Error(`unescaped & in text near offset ${i}`);
    if (stack.length === 0 && text.trim() !== "") throw new Error(`text outside the root near offset ${i}`);
    if (lt < 0) break;
    const m = TAG.exec(s.slice(lt));
    if (!m) throw new Error(`malformed tag at offset ${lt}: ${s.slice(lt, lt + 40)}`);
    if (BAD_AMP.test(m[3] ?? "")) throw new Error(`unescaped & in an attribute at offset ${lt}`);
    const names = [...(m[3] ?? "").matchAll(/([\w:.-]+)=/g)].map((a) => a[1]);
    if (new Set(names).size !== names.length) throw new Error(`duplicate attribute at offset ${lt}`);
    const name = m[2]!;
    if (m[1]) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> at offset ${lt} closes <${open ?? "nothing"}>`);
    } else {
      if (stack.length === 0) roots++;
      if (!m[4]) stack.push(name);
    }
    i = lt + m[0].length;
  }
  if (stack.length) throw new Error(`unclosed <${stack.join("> <")}>`);
  if (roots !== 1) throw new Error(`expected one root element, found ${roots}`);
}

/** A synthetic run like the published figure: eight trials, scores in 20 % steps. */
export function demoReport(): RunReport {
  const scores = [0.2, 0.4, 1, 0, 0.6, 0.4, 0.8, 0.2];
  const trials: TrialRecord[] = scores.map((s, i) => ({
    trial: i + 1,
    seed: 10 + i,
    episode_id: `ep-${i + 1}`,
    outcome: s === 1 ? "success" : i === 3 ? "incomplete" : "failed",
    success: s === 1,
    end_reason: s === 1 ? "success" : i === 3 ? "finished" : "task_failed",
    ...(s < 1 && i !== 3 ? { end_detail: "wire contact <loop & wire>" } : {}),
    ended_by: i === 3 ? "run" : "episode",
    ...(i === 3 ? { run_note: "agent exited with code 1 while the episode was running" } : {}),
    progress: Math.min(1, s + 0.07 * (s < 1 ? 1 : 0)),
    progress_quantised: s,
    episode_s: 10 + i,
    wall_s: 12 + i,
    record_path: `records/ep-${i + 1}/record.mcap`,
    agent: { exit_code: i === 3 ? 1 : 0, signal: null, log: `trials/${i + 1}/agent.log` },
  }));
  return {
    format: RUN_REPORT_FORMAT,
    task: "buzz-wire",
    level: "joint_position",
    bench: "sim-buzzwire",
    agent: 'node agent.mjs --name "A & B"',
    seed_base: 10,
    started_at: "2025-01-01T00:00:00.000Z",
    ended_at: "2025-01-01T00:10:00.000Z",
    trials,
    summary: summarize(trials),
  };
}
