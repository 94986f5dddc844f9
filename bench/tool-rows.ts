/**
 * The long act the stop benches plan (bench/stop-latency.ts estop-planning, bench/act-turns.ts):
 * `n` tool-pose rows of a 2 cm min-jerk move along x from the current tool pose, a chunk the
 * pre-check accepts (a straight ramp from rest is refused: acceleration at row 0).
 */
export function minJerkToolRows(
  tool: { xyz: readonly number[]; quat_xyzw: readonly number[] },
  gripperWidthM: number,
  n: number,
): number[][] {
  const mj = (x: number) => 10 * x ** 3 - 15 * x ** 4 + 6 * x ** 5;
  return Array.from({ length: n }, (_, i) => [
    tool.xyz[0]! + 0.02 * mj((i + 1) / n),
    tool.xyz[1]!,
    tool.xyz[2]!,
    ...tool.quat_xyzw,
    gripperWidthM,
  ]);
}
