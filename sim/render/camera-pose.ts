/**
 * `lookAt` for aiming a camera (the benches' and the demo scene's viewpoints). world ← camera of
 * a described camera is calibration/camera-pose.ts's `worldFromCamera`.
 */
import { type Mat4, mat4Identity, type Vec3, vcross, vnorm, vscale, vsub } from "../../robots/math.ts";

/** Camera optical frame (OpenCV: x right, y down, z forward) looking from `eye` at `target`. */
export function lookAt(eye: Vec3, target: Vec3, up: Vec3 = [0, 0, 1]): Mat4 {
  const z0 = vsub(target, eye);
  const z = vscale(z0, 1 / vnorm(z0));
  let x = vcross(z, up);
  if (vnorm(x) < 1e-6) x = vcross(z, [1, 0, 0]);
  x = vscale(x, 1 / vnorm(x));
  const y = vcross(z, x);
  const m = mat4Identity();
  m[0] = x[0];
  m[1] = y[0];
  m[2] = z[0];
  m[3] = eye[0];
  m[4] = x[1];
  m[5] = y[1];
  m[6] = z[1];
  m[7] = eye[1];
  m[8] = x[2];
  m[9] = y[2];
  m[10] = z[2];
  m[11] = eye[2];
  return m;
}
