/**
 * Franka link collision capsules in the kinematic frames of robots/franka/models.ts.
 * Frame indices: 0 base, 1…7 joint frames, 8 flange.
 * TODO(kinematics): fitted capsules are being written with the kinematics work.
 */
import type { LinkCapsule } from "../types.ts";

export const FRANKA_CAPSULES: readonly LinkCapsule[] = [];
