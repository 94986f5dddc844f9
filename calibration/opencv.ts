/**
 * The one way this project loads OpenCV (`@techstark/opencv-js`, a WebAssembly build with the
 * aruco / ChArUco detector, `calibrateCameraExtended`, `solvePnP`, `Rodrigues`, `projectPoints`).
 * Loading takes about two seconds, so it happens once per process and only when a procedure
 * first needs it.
 */

import { createRequire } from "node:module";

// biome-ignore lint/suspicious/noExplicitAny: opencv-js ships loose typings; callers use the few calls they need
export type OpenCv = any;

let loading: Promise<{ cv: OpenCv }> | null = null;

/**
 * The OpenCV module, loaded on first call and shared by every later call. It comes wrapped
 * (`const { cv } = await loadOpenCv()`): a promise that resolved to the module itself would
 * never settle, the module being a thenable.
 */
export function loadOpenCv(): Promise<{ cv: OpenCv }> {
  loading ??= (async () => {
    // loaded through require: the 10 MB UMD bundle must not go through a bundler's transform
    // (vitest's module runner stalls on it)
    const cv: OpenCv = createRequire(import.meta.url)("@techstark/opencv-js");
    if (cv.Mat) return { cv };
    // the Emscripten module is a thenable that resolves to itself, so `await` on it never
    // settles: take it through its own then() and hand it back wrapped
    return await new Promise<{ cv: OpenCv }>((resolve) => {
      cv.then((m: OpenCv) => resolve({ cv: m }));
    });
  })();
  return loading;
}
