/**
 * The simulator's camera renderer: public API.
 *
 * ```ts
 * import { Rasterizer, worldFromCamera } from "./render/index.ts";
 * const r = new Rasterizer(cameraDescription);          // once per camera
 * const out = r.createTarget();                         // { rgb: Uint8Array, depthMm: Uint16Array }
 * r.render(scene, worldFromCamera(cameraDescription, worldFromTool), out);   // per frame
 * const jpeg = await encodeRgb(out.rgb, r.width, r.height, "jpeg");
 * const depthPng = await encodeDepthPng16(out.depthMm, r.width, r.height);
 * ```
 * See rasterizer.ts for conventions and method, scene.ts for the scene contract.
 */
export { worldFromCamera } from "../../calibration/camera-pose.ts";
export { type RasterCamera, Rasterizer, type RasterizerOptions, type RenderTarget } from "./rasterizer.ts";
export type { Rgb, Scene, SceneObject, Shape } from "./scene.ts";
export { meshFor } from "./tessellate.ts";
