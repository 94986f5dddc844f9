#!/usr/bin/env -S node --single-threaded-gc
// robot-gateway command line: runs the TypeScript sources through tsx (no build step).
// tsx is registered in this process (no child process): SIGINT/SIGTERM reach the gateway itself.
// The shebang's node option keeps the event loop from waiting on GC helper threads
// (cli/scheduling.ts LATENCY_NODE_ARGS).
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
