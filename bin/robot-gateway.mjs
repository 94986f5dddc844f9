#!/usr/bin/env -S node --single-threaded-gc --max-semi-space-size=2 --expose-gc
// robot-gateway command line: runs the TypeScript sources through tsx (no build step).
// tsx is registered in this process (no child process): SIGINT/SIGTERM reach the gateway itself.
// The shebang's node options keep the event loop's GC pauses short and its own (cli/scheduling.ts
// LATENCY_NODE_ARGS).
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
