/**
 * docs/errors.md is generated from the error registry, so the table can never drift:
 * `npx tsx gateway/errors-doc.ts` rewrites it, and a test fails when it is stale. Retired codes
 * are listed apart with the code that carries their meaning now, so the main table has one
 * code per meaning.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ERRORS, type ErrorSpec } from "./errors.ts";

const cell = (s: string) => s.replace(/\|/g, "\\|");

export function renderErrorsDoc(): string {
  const all = Object.entries(ERRORS as Record<string, ErrorSpec>);
  const rows = all
    .filter(([, s]) => !s.retired)
    .map(([code, s]) => `| \`${code}\` | ${s.status} | ${cell(s.message)} | ${s.hint} |`);
  const retired = all
    .filter(([, s]) => s.retired)
    .map(([code, s]) => `| \`${code}\` | ${s.replacedBy ? `\`${s.replacedBy}\`` : "—"} |`);
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
    ...(retired.length
      ? [
          "## Retired codes",
          "",
          "No longer raised; never reused. The code in the second column carries the meaning now.",
          "",
          "| retired code | replaced by |",
          "|---|---|",
          ...retired,
          "",
        ]
      : []),
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL("../docs/errors.md", import.meta.url), renderErrorsDoc());
}
