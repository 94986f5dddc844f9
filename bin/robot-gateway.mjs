#!/usr/bin/env node
// robot-gateway command line: runs the TypeScript sources through tsx (no build step).
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
