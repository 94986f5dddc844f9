/**
 * Franka link collision capsules in the kinematic frames of robots/franka/models.ts.
 * Frame indices: 0 base, 1…7 joint frames (modified DH), 8 flange.
 *
 * How they were fitted: the collision meshes that Franka publishes in franka_description
 * (`meshes/robot_arms/{fer,fr3}/collision/link0…link7.stl`, identical for Panda/FER and FR3, and
 * `robot_ee/franka_hand_white/collision/hand.stl`) are given in the URDF link frames, which coincide
 * with the modified-DH frames used here (the hand's URDF frame is the flange frame turned by −π/4
 * about z). Each link's mesh was sampled (vertices and points inside every triangle) and covered by
 * one to three capsules of minimal volume, then rounded outward to whole millimetres so that every
 * sample lies inside the union (largest remaining gap found: none). These collision meshes are
 * already coarse hulls a few millimetres outside the painted surface, so the capsules are
 * conservative; a safety profile adds its own clearance on top.
 *
 * The fingers are not in a mesh: their boxes are published in the hand's URDF (finger joint
 * 58.4 mm above the hand frame, fingertip 54.5 mm above that, each finger ≤ 26 mm thick across the
 * opening, 22 mm wide). Their capsules cover every opening from 0 to 80 mm.
 *
 * Notes for users:
 * - link0's capsule reaches about 6 cm below the base plane: skip base-vs-table checks.
 * - Neighbouring links' capsules overlap at every joint: skip adjacent pairs in self-collision.
 * - The hand and finger capsules describe the Franka Hand; a bench without it ignores them (`link`
 *   "hand", "leftfinger", "rightfinger"). A tool held by the fingers needs its own capsules.
 */
import type { LinkCapsule } from "../types.ts";

/** cos(π/4): the hand's y axis (finger travel) points along (c, c, 0) in the flange frame. */
const C45 = Math.SQRT1_2;
/** Height of the finger capsules' axis above the flange, m (58.4 mm joint + half the 54.5 mm finger). */
const FINGER_AXIS_Z_M = 0.0864;

function cap(
  link: string,
  frame: number,
  a: readonly [number, number, number],
  b: readonly [number, number, number],
  radiusM: number,
): LinkCapsule {
  return Object.freeze({ link, frame, a: Object.freeze(a), b: Object.freeze(b), radiusM });
}

export const FRANKA_CAPSULES: readonly LinkCapsule[] = Object.freeze([
  // link0 (base housing, 0…0.14 m tall, cable outlet toward −x): one fat capsule along x.
  cap("link0", 0, [-0.06, 0, 0.05], [0, 0, 0.05], 0.115),

  // link1: column from the base top up to joint 2 (along −z of frame 1), the joint-2 housing along
  // −y, and a filler for the hull between them.
  cap("link1", 1, [0, 0, -0.17], [0, 0, 0], 0.06),
  cap("link1", 1, [0, -0.075, 0], [0, 0, 0], 0.06),
  cap("link1", 1, [0, -0.04, -0.13], [0, -0.06, -0.05], 0.065),

  // link2: joint-2 housing along +z of frame 2, upper-arm column along −y toward joint 3, filler.
  cap("link2", 2, [0, 0, 0.075], [0, 0, 0], 0.06),
  cap("link2", 2, [0, -0.175, 0], [0, 0, 0], 0.06),
  cap("link2", 2, [0, -0.13, 0.04], [0, -0.05, 0.06], 0.065),

  // link3: upper-arm column along −z of frame 3, joint-4 housing at x = 0.0825 along +y, filler.
  cap("link3", 3, [0, 0, -0.1], [0, 0, 0], 0.06),
  cap("link3", 3, [0.0825, 0.055, 0], [0.0825, 0, 0], 0.06),
  cap("link3", 3, [0.045, 0.02, -0.08], [0.035, 0.06, -0.05], 0.07),

  // link4: joint-4 housing along +z of frame 4, forearm root at x = −0.0825 along +y, filler.
  cap("link4", 4, [0, 0, 0.055], [0, 0, 0], 0.06),
  cap("link4", 4, [-0.0825, 0.07, 0], [-0.0825, 0, 0], 0.06),
  cap("link4", 4, [-0.02, 0.03, 0.035], [-0.08, 0.09, 0], 0.07),

  // link5: forearm from the elbow (z = −0.245 in frame 5) up to the wrist, leaning toward +y.
  cap("link5", 5, [0, 0.01, -0.245], [0, 0.065, 0], 0.07),

  // link6: wrist housing from joint 6 (origin) to the joint-7 axis at x = 0.088.
  cap("link6", 6, [0, 0.005, 0], [0.09, 0.005, 0], 0.08),

  // link7: flange body along +z of frame 7 and its diagonal side bulge (the 45° connector).
  cap("link7", 7, [0, 0, 0.07], [0, 0, 0.085], 0.05),
  cap("link7", 7, [-0.01, -0.01, 0.073], [0.04, 0.04, 0.079], 0.045),

  // Franka Hand body: 0.2 m long across the finger travel (hand y = flange (c, c, 0)).
  cap("hand", 8, [-0.052, -0.052, 0.025], [0.052, 0.052, 0.025], 0.053),

  // Fingers: each capsule spans its finger's whole travel (hand y from 0 to 66 mm, fingertip up to
  // 113 mm above the flange).
  cap(
    "leftfinger",
    8,
    [0.02 * C45, 0.02 * C45, FINGER_AXIS_Z_M],
    [0.045 * C45, 0.045 * C45, FINGER_AXIS_Z_M],
    0.037,
  ),
  cap(
    "rightfinger",
    8,
    [-0.02 * C45, -0.02 * C45, FINGER_AXIS_Z_M],
    [-0.045 * C45, -0.045 * C45, FINGER_AXIS_Z_M],
    0.037,
  ),
]);
