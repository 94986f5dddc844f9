#!/usr/bin/env node
// robot-gateway command line: runs the TypeScript sources through tsx (no build step).
// tsx is registered in this process (no child process): SIGINT/SIGTERM reach the gateway itself.
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
