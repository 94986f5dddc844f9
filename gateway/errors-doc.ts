/**
 * docs/errors.md is generated from the error registry, so the table can never drift:
 * `npx tsx gateway/errors-doc.ts` rewrites it, and a test fails when it is stale.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ERRORS, type ErrorSpec } from "./errors.ts";

export function renderErrorsDoc(): string {
  const rows = Object.entries(ERRORS as Record<string, ErrorSpec>).map(
    ([code, s]) =>
      `| \`${code}\` | ${s.status} | ${s.message.replace(/\|/g, "\\|")} | ${s.hint}${s.retired ? " (retired)" : ""} |`,
  );
  return [
    "# Error codes",
    "",
    'Every error response is `{"error": {"code", "message", "details"}}` with the HTTP status below.',
    "`details` carries the context named in braces (row, column, joint, limit, device, …).",
    "Codes are registered once in `seam/errors.ts` (API and device codes; drivers raise",
    "theirs from the same table) and never reused. Device codes reach a client inside",
    "`RB_ERR_BACKEND_FAULT`. This file is generated from the registry (`npx tsx gateway/errors-doc.ts`).",
    "",
    "| code | status | message | what to do |",
    "|---|---|---|---|",
    ...rows,
    "",
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL("../docs/errors.md", import.meta.url), renderErrorsDoc());
}
