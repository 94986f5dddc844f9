/** vitest config of the farm's netns suite (scripts/ci-suites/farm.sh): root only, not in `npm test`. */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["farm/*.netns.ts"],
    testTimeout: 1_500_000,
    hookTimeout: 180_000,
    pool: "forks",
  },
});
