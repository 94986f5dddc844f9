/**
 * `robot-gateway replay RECORD.mcap --bench BENCH`: re-execute a recorded episode's accepted
 * commands open loop on another bench (same task, level, seed; through the gateway's pre-check,
 * IK and safety supervisor) and write the divergence report (recorded vs replayed) to --out.
 * A real bench moves only with --allow-motion. Exit codes: 0 replayed (every command executed),
 * 1 stopped early, 2 refused (bad input, motion not allowed).
 */
import { dirname } from "node:path";
import { Command } from "commander";
import { loadBenchFile } from "../compose/bench-config.ts";
import { loadRecordedEpisode, replayOnBench, writeReplayReport } from "../compose/twin/replay.ts";
import { CodedError } from "../seam/errors.ts";

export function replayCommand(): Command {
  return new Command("replay")
    .description("re-execute a record's accepted commands open loop on a bench and report the divergence")
    .argument("<record>", "record.mcap of the episode to replay")
    .requiredOption("--bench <file>", "bench file to replay on (e.g. the twin of the recorded bench)")
    .option("--out <dir>", "report folder (default runs/replay-<timestamp>/)")
    .option("--allow-motion", "let a real bench move the robot (sim → real regression)")
    .action(async (record: string, o: { bench: string; out?: string; allowMotion?: boolean }) => {
      try {
        const rec = await loadRecordedEpisode(record);
        if (rec.commands.length === 0)
          throw new CodedError("RB_ERR_TWIN_INPUT", {
            tool: "replay",
            path: record,
            reason: "no accepted commands",
          });
        const { config, baseDir } = loadBenchFile(o.bench);
        const out = o.out ?? `runs/replay-${new Date().toISOString().replace(/[:.]/g, "-")}`;
        const res = await replayOnBench(rec, config, { baseDir, allowMotion: !!o.allowMotion });
        console.log(writeReplayReport(out, rec, config.name, res));
        console.error(
          `replay: ${res.executed}/${res.sent} commands executed; report in ${out}/ (record dir ${dirname(record)})`,
        );
        if (res.stoppedEarly) console.error(`replay: stopped early: ${res.stoppedEarly}`);
        process.exitCode = res.stoppedEarly ? 1 : 0;
      } catch (e) {
        if (!(e instanceof CodedError)) throw e;
        console.error(`robot-gateway replay: ${e.code}: ${e.message}\n  ${e.hint}`);
        process.exitCode = 2;
      }
    });
}
