/** robot-gateway command line. Every command has --help. */
import { Command, InvalidArgumentError } from "commander";
import { CodedError } from "../seam/errors.ts";
import { ROBOTS } from "../robots/franka/models.ts";
import { robotSpec } from "../gateway/api/spec.ts";
import { calibrateCommand } from "./calibrate.ts";
import { compareCommand } from "./compare.ts";
import { devices } from "./devices.ts";
import { farmCommand } from "./farm.ts";
import { gradeCommand } from "./grade.ts";
import { hilCommand } from "./hil.ts";
import { mcpCommand } from "./mcp.ts";
import { replayCommand } from "./replay.ts";
import { runCommand } from "./run.ts";
import { sysidCommand } from "./sysid.ts";
import { announce, exitOnSignals, serve } from "./serve.ts";
import { CPU_AFFINITY_HELP, cpuAffinityArg, RT_PRIORITY_HELP, rtPriorityArg } from "./scheduling.ts";

function int(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0)
      throw new InvalidArgumentError(`${name} must be a non-negative integer`);
    return n;
  };
}

const program = new Command()
  .name("robot-gateway")
  .description("One Standard API over a simulated or physical Franka bench")
  .showHelpAfterError();

program
  .command("serve")
  .description("serve the Standard API for a bench (default: the built-in bench)")
  .option("--bench <file>", "bench file (YAML or JSON)")
  .option("--task <id>", "task of the first episode")
  .option("--level <name>", "task level of the first episode")
  .option("--seed <n>", "seed of the first episode", int("--seed"))
  .option("--host <host>", "bind address", "127.0.0.1")
  .option("--port <n>", "port (0 = any free port)", int("--port"), 8080)
  .option("--agent-token <token>", "agent bearer token (generated when omitted)")
  .option("--operator-token <token>", "operator bearer token (generated when omitted)")
  .option("--allow-motion", "let a real bench move the robot (never needed in simulation)")
  .option("--twin", "serve the bench's digital twin: the simulator built from its calibration file")
  .option("--rt-priority <n|off>", RT_PRIORITY_HELP, rtPriorityArg)
  .option("--cpu-affinity <list|off>", CPU_AFFINITY_HELP, cpuAffinityArg)
  .action(async (o) => {
    const s = await serve(o).catch((e: unknown) => {
      // a refused start (e.g. RB_ERR_STORAGE: unwritable records directory) is a coded message
      if (!(e instanceof CodedError)) throw e;
      console.error(`robot-gateway serve: ${e.code}: ${e.message}\n  ${e.hint}`);
      process.exit(2);
    });
    exitOnSignals(s);
    announce(s);
  });

program
  .command("spec")
  .description("print the published limits of a robot model as JSON")
  .option("--robot <id>", `robot model: ${Object.keys(ROBOTS).join(" | ")} (default: all)`)
  .action((o: { robot?: string }) => {
    const ids = o.robot ? [o.robot] : Object.keys(ROBOTS);
    const out = ids.map((id) => {
      const r = ROBOTS[id as keyof typeof ROBOTS];
      if (!r) throw new InvalidArgumentError(`unknown robot ${id}`);
      return robotSpec(r);
    });
    console.log(JSON.stringify(o.robot ? out[0] : out, null, 2));
  });

program
  .command("estop")
  .description("engage the e-stop of a running gateway (operator token)")
  .requiredOption("--url <url>", "gateway URL")
  .requiredOption("--operator-token <token>", "operator token")
  .option("--reason <text>", "why", "cli")
  .action(async (o: { url: string; operatorToken: string; reason: string }) => {
    const res = await fetch(new URL("/v1/admin/estop", o.url), {
      method: "POST",
      headers: { authorization: `Bearer ${o.operatorToken}`, "content-type": "application/json" },
      body: JSON.stringify({ reason: o.reason }),
    });
    console.log(res.status, await res.text());
    process.exitCode = res.ok ? 0 : 1;
  });

program
  .command("devices")
  .description("list serial ports (buzz box, Firmata) and optionally probe a rosbridge server")
  .option("--rosbridge <url>", "rosbridge URL to probe, e.g. ws://127.0.0.1:9090")
  .option("--joint-states <topic>", "joint state topic to wait for", "/franka/joint_states")
  .option("--timeout <ms>", "probe timeout, ms", int("--timeout"), 3000)
  .option("--json", "print JSON")
  .action(async (o: { rosbridge?: string; jointStates: string; timeout: number; json?: boolean }) => {
    await devices({
      ...(o.rosbridge ? { rosbridge: o.rosbridge } : {}),
      jointStatesTopic: o.jointStates,
      timeoutMs: o.timeout,
      json: !!o.json,
    });
  });

program.addCommand(gradeCommand());
program.addCommand(runCommand());
program.addCommand(mcpCommand());
program.addCommand(farmCommand());
program.addCommand(calibrateCommand());
program.addCommand(replayCommand());
program.addCommand(sysidCommand());
program.addCommand(compareCommand());
program.addCommand(hilCommand());

await program.parseAsync(process.argv);
