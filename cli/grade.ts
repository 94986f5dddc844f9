/**
 * `robot-gateway grade <record.mcap>`: recompute an episode's result from its record alone and
 * compare it with the result the gateway recorded live. Prints the recomputed result.json on
 * stdout; differences and notes go to stderr.
 *
 * Exit codes: 0 the results agree, 1 they differ, 2 the record cannot be graded (not a record,
 * truncated before the episode ended, unknown task), 3 (`--recover` only) a truncated record was
 * graded up to its last complete message: the printed result is marked `recovered`, outcome
 * `incomplete`. Recovery is opt-in so that a crashed episode never passes for a graded one.
 *
 * Register in cli/main.ts with `program.addCommand(gradeCommand())`; also runs on its own:
 * `npx tsx cli/grade.ts <record.mcap>`.
 */
import { isEntryPoint } from "./entry.ts";
import { Command } from "commander";
import { gradeRecord, RecordError } from "../gateway/recorder/replay.ts";

/** Grade one record; returns the exit code. */
export async function runGrade(
  path: string,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
  opts: { recover?: boolean } = {},
): Promise<number> {
  try {
    const report = await gradeRecord(path, { recover: !!opts.recover });
    out.write(`${JSON.stringify(report.recomputed, null, 2)}\n`);
    for (const n of report.notes) err.write(`note: ${n}\n`);
    if (report.recovered) {
      err.write(
        `grade: RECOVERED a truncated record (${report.stats.readings} readings replayed); outcome incomplete, no recorded result to compare with\n`,
      );
      return 3;
    }
    if (report.agree) {
      err.write(
        `grade: agrees with the recorded result (${report.stats.readings} readings, ${report.stats.events} events, ${report.stats.commands} commands replayed)\n`,
      );
      return 0;
    }
    err.write(`grade: DIFFERS from the recorded result in ${report.differences.length} field(s):\n`);
    for (const d of report.differences) {
      err.write(
        `  ${d.path}: recorded ${JSON.stringify(d.recorded)} ≠ recomputed ${JSON.stringify(d.recomputed)}\n`,
      );
    }
    return 1;
  } catch (e) {
    if (e instanceof RecordError) {
      err.write(`grade: cannot grade (${e.kind}): ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

export function gradeCommand(): Command {
  return new Command("grade")
    .description("recompute an episode's result from its record.mcap and compare it with the recorded result")
    .argument("<record>", "path of a record.mcap")
    .option(
      "--recover",
      "grade a record cut off before the episode ended (crash) up to its last complete message; exit 3, outcome incomplete",
    )
    .action(async (record: string, o: { recover?: boolean }) => {
      process.exitCode = await runGrade(record, process.stdout, process.stderr, { recover: !!o.recover });
    });
}

if (isEntryPoint(import.meta.url)) {
  await gradeCommand().name("grade").parseAsync(process.argv);
}
