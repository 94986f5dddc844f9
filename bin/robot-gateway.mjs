#!/usr/bin/env -S UV_USE_IO_URING=1 node --single-threaded-gc
// robot-gateway command line: runs the TypeScript sources through tsx (no build step).
// tsx is registered in this process (no child process): SIGINT/SIGTERM reach the gateway itself.
// The shebang's settings keep the event loop from waiting on other threads (cli/scheduling.ts
// LATENCY_NODE_ARGS, LATENCY_ENV): V8's GC on the loop thread, libuv's file I/O through io_uring.
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");
