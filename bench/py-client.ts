/**
 * Per-call latency of the Python client (clients/python) beside the same HTTP call made with
 * bare http.client, against the simulated buzz-wire bench served on loopback.
 * Needs .venv-py (scripts/py-client-setup.sh). Usage: npx tsx bench/py-client.ts [calls=100]
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { testGateway } from "../compose/testing.ts";

const calls = process.argv[2] ?? "100";
const python = fileURLToPath(new URL("../.venv-py/bin/python", import.meta.url));
if (!existsSync(python)) {
  console.log("no .venv-py: run scripts/py-client-setup.sh first");
  process.exit(1);
}
const g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1 } });
const address = await g.app.listen({ host: "127.0.0.1", port: 0 });
const token = g.agent.authorization.replace(/^Bearer /, "");
// not spawnSync: the gateway answers on this process's event loop while the script runs
const child = spawn(
  python,
  [fileURLToPath(new URL("py_client_latency.py", import.meta.url)), address, token, calls],
  {
    stdio: "inherit",
  },
);
const code: number = await new Promise((res) => child.once("exit", (c) => res(c ?? 1)));
await g.close();
process.exitCode = code;
