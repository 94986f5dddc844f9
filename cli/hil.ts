/**
 * `robot-gateway hil --bench FILE [--junit out.xml]`: the HIL regression a lab runs in its own CI
 * against its bench: the tier-3 suites (hil-tests/*.test.ts that honour HIL_BENCH, through vitest;
 * JUnit XML with --junit), then the bench's figures (hil-tests/baselines.ts: tracking error, stop
 * settle time, frame latency) against the baselines stored for that bench name. Exit 0 when the
 * suites pass and no figure regresses; 1 otherwise; 2 when it cannot run. --update-baselines
 * stores the measured figures instead of comparing (first run on a bench, or after a deliberate change).
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { loadBenchFile } from "../compose/bench-config.ts";
import { compareFigures, measureFigures, readBaselines, writeBaselines } from "../hil-tests/baselines.ts";

const SUITES = ["hil-tests/buzz-wire.test.ts"];

export function hilCommand(): Command {
  return new Command("hil")
    .description(
      "run the HIL suites and the stored-baseline checks against a bench file (non-zero exit on regression)",
    )
    .requiredOption("--bench <file>", "bench file (a sim bench, or a real one with --allow-motion)")
    .option("--junit <file>", "write the suites' results as JUnit XML")
    .option("--baselines <file>", "baselines file", "hil-tests/baselines.json")
    .option("--tolerance <share>", "allowed growth of a figure over its baseline", (v) => Number(v), 0.2)
    .option("--update-baselines", "store the measured figures as the bench's baselines")
    .option("--skip-suites", "only the baseline figures")
    .option("--allow-motion", "let a real bench move (the suites and figures drive the arm)")
    .action(
      async (o: {
        bench: string;
        junit?: string;
        baselines: string;
        tolerance: number;
        updateBaselines?: boolean;
        skipSuites?: boolean;
        allowMotion?: boolean;
      }) => {
        const { config, baseDir } = loadBenchFile(o.bench);
        if (config.backend.type === "real" && !o.allowMotion && !config.backend.allowMotion) {
          console.error("robot-gateway hil: the bench is real: pass --allow-motion with the workspace clear");
          process.exitCode = 2;
          return;
        }
        let failed = false;
        if (!o.skipSuites) {
          const vitest = fileURLToPath(new URL("../node_modules/vitest/vitest.mjs", import.meta.url));
          const args = [vitest, "run", ...SUITES, "--reporter=default"];
          if (o.junit) args.push("--reporter=junit", `--outputFile.junit=${o.junit}`);
          const r = spawnSync(process.execPath, args, {
            stdio: "inherit",
            env: { ...process.env, HIL_BENCH: o.bench },
            cwd: fileURLToPath(new URL("..", import.meta.url)),
          });
          if (r.status !== 0) failed = true;
          console.log(`hil: suites ${r.status === 0 ? "passed" : `FAILED (exit ${r.status})`}`);
        }
        const m = await measureFigures(config, baseDir);
        console.log(
          `hil: ${config.name}: tracking max ${(m.tracking_max_rad * 1000).toFixed(3)} mrad, stop settle ${m.stop_settle_ms.toFixed(1)} ms, frame latency ${m.frame_latency_ms.toFixed(1)} ms`,
        );
        const all = readBaselines(o.baselines);
        if (o.updateBaselines) {
          writeBaselines(o.baselines, { ...all, [config.name]: m });
          console.log(`hil: baselines of ${config.name} stored in ${o.baselines}`);
        } else if (!all[config.name]) {
          console.error(
            `hil: no baselines for ${config.name} in ${o.baselines} (run once with --update-baselines)`,
          );
          failed = true;
        } else {
          const reg = compareFigures(m, all[config.name]!, o.tolerance);
          for (const r of reg)
            console.error(
              `hil: REGRESSION ${r.figure}: ${r.measured} > limit ${r.limit} (baseline ${r.baseline})`,
            );
          if (reg.length > 0) failed = true;
          else console.log("hil: no figure regressed");
        }
        process.exitCode = failed ? 1 : 0;
      },
    );
}
