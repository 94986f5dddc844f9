/**
 * The operator console: the page at /console and the operator-only data behind it.
 *
 * The page itself (HTML, our script, the vendored Preact/htm/uPlot modules) is a login shell and
 * holds no bench data; every call that carries data is under /v1/admin/ and needs the operator
 * token, which the page sends as a Bearer header (kept in the tab's sessionStorage). The agent
 * token is refused there like on every admin route.
 *
 * - GET /v1/admin/live?hz=N   — newline-delimited JSON, one live state per line, N per second (1–30)
 * - GET /v1/admin/cameras/:name/image?depth=1&have=ID — a capture as JPEG (depth as a colour map);
 *   with `have` (the x-image-id the viewer has) it waits up to 5 s for a newer one, then 204
 * - GET /v1/admin/twin/cameras/:name/image — the shadow twin's render of that camera (shadow benches)
 * - GET /v1/admin/episodes/:id/record — the episode's MCAP record
 * - GET /v1/admin/episodes/:id/grade  — the offline grade of that record against result.json
 */
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { GatewayError } from "../errors.ts";
import { encodeImage } from "../frames/frame-store.ts";
import type { Gateway } from "../gateway.ts";
import { gradeRecord } from "../recorder/replay.ts";
import { depthColourMap } from "./depth-colour.ts";
import type { ConsoleHub } from "./hub.ts";
import { type ViewerImage, ViewerCaptures } from "./viewer-captures.ts";

export interface ConsoleRouteOptions {
  gateway: Gateway;
  hub: ConsoleHub;
  /** the operator guard of the admin API */
  operatorGuard: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

const UI_DIR = join(dirname(fileURLToPath(import.meta.url)), "ui");
const require = createRequire(import.meta.url);
/** A file of an installed package (found from its entry point; some packages do not export package.json). */
function pkgFile(pkg: string, file: string): string {
  let dir = dirname(require.resolve(pkg));
  while (!existsSync(join(dir, "package.json")) || basename(dir) !== pkg.split("/").pop()) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the folder of package ${pkg}`);
    dir = up;
  }
  return join(dir, file);
}

/** Every file the page loads, by URL name: our own and the vendored ES modules. */
const ASSETS: Record<string, { path: string; type: string }> = {
  "app.js": { path: join(UI_DIR, "app.js"), type: "text/javascript" },
  "style.css": { path: join(UI_DIR, "style.css"), type: "text/css" },
  "preact.mjs": { path: pkgFile("preact", "dist/preact.mjs"), type: "text/javascript" },
  "hooks.mjs": { path: pkgFile("preact", "hooks/dist/hooks.mjs"), type: "text/javascript" },
  "htm.mjs": { path: pkgFile("htm", "dist/htm.mjs"), type: "text/javascript" },
  "uplot.mjs": { path: pkgFile("uplot", "dist/uPlot.esm.js"), type: "text/javascript" },
  "uplot.css": { path: pkgFile("uplot", "dist/uPlot.min.css"), type: "text/css" },
};

/** A capture is shared by every viewer that asks within this window, ms. */
const CAPTURE_SHARE_MS = 100;
/**
 * Fresh captures for viewers take at most this share of wall time (viewer-captures.ts): on the
 * sim a capture is a render in the control loop's thread; bench/console-cost.ts measures what one
 * viewer adds to act latency (target ≤ 5 %).
 */
const CAPTURE_DUTY = 0.02;
/** a viewer that has the latest image waits this long for a newer one before it is told it has the latest, ms */
const HOLD_MS = 5000;

export async function consoleRoutes(app: FastifyInstance, opts: ConsoleRouteOptions): Promise<void> {
  const { gateway: gw, hub } = opts;
  const html = readFileSync(join(UI_DIR, "index.html"));
  const assets = new Map(Object.entries(ASSETS).map(([k, v]) => [k, { ...v, body: readFileSync(v.path) }]));

  app.get("/console", { schema: { hide: true } }, async (_req, reply) =>
    reply.type("text/html; charset=utf-8").header("cache-control", "no-store").send(html),
  );
  app.get(
    "/console/assets/:file",
    { schema: { hide: true, params: z.object({ file: z.string().max(40) }) } },
    async (req, reply) => {
      const a = assets.get((req.params as { file: string }).file);
      if (!a) throw new GatewayError("RB_ERR_NOT_FOUND", { method: "GET", url: req.url });
      return reply.type(a.type).send(a.body);
    },
  );

  // a closing gateway answers the viewers waiting for a newer image at once (they would hold its close)
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });

  await app.register(async (op) => {
    const r = op.withTypeProvider<ZodTypeProvider>();
    r.addHook("onRequest", opts.operatorGuard);

    r.get(
      "/v1/admin/live",
      { schema: { querystring: z.object({ hz: z.coerce.number().min(1).max(30).default(10) }) } },
      async (req, reply) => {
        const periodMs = 1000 / req.query.hz;
        const unwatch = hub.watch();
        reply.hijack();
        const res = reply.raw;
        res.writeHead(200, {
          "content-type": "application/x-ndjson",
          "cache-control": "no-store",
          "x-accel-buffering": "no",
        });
        let timer: NodeJS.Timeout | undefined;
        const stop = () => {
          if (timer) clearInterval(timer);
          timer = undefined;
          unwatch();
        };
        const send = () => {
          try {
            res.write(`${JSON.stringify(hub.snapshot(gw))}\n`);
          } catch (e) {
            res.write(`${JSON.stringify({ error: e instanceof Error ? e.message : String(e) })}\n`);
          }
        };
        req.raw.on("close", stop);
        res.on("close", stop);
        send();
        timer = setInterval(send, periodMs);
      },
    );

    const captures = new ViewerCaptures({ duty: CAPTURE_DUTY, shareMs: CAPTURE_SHARE_MS });
    /**
     * The image, once there is one newer than the viewer's (`?have=<x-image-id>`): the request
     * waits for it (at most HOLD_MS, then 204: "you have the latest").
     */
    const image = async (
      req: FastifyRequest,
      reply: FastifyReply,
      have: number | undefined,
      key: string,
      make: () => Promise<Buffer>,
    ) => {
      const gone = () => closing || req.raw.destroyed || reply.raw.destroyed || reply.raw.writableEnded;
      const img: ViewerImage = await captures.newer(key, have, make, HOLD_MS, gone);
      reply
        .header("cache-control", "no-store")
        .header("x-image-id", String(img.id))
        .header("x-next-ms", String(Math.ceil(captures.nextFreshInMs)));
      if (have === img.id) return reply.code(204).send();
      return reply.type("image/jpeg").send(await img.body);
    };
    const cameraOr404 = (name: string) => {
      const cam = gw.bench.backend.describe().cameras.find((c) => c.name === name);
      if (!cam) throw new GatewayError("RB_ERR_UNKNOWN_CAMERA", { camera: name });
      return cam;
    };

    r.get(
      "/v1/admin/cameras/:name/image",
      {
        schema: {
          params: z.object({ name: z.string().max(100) }),
          querystring: z.object({
            depth: z.enum(["0", "1"]).default("0"),
            have: z.coerce.number().int().optional(),
          }),
        },
      },
      async (req, reply) => {
        const { name } = req.params;
        const cam = cameraOr404(name);
        const depth = req.query.depth === "1";
        if (depth && !cam.depth)
          throw new GatewayError("RB_ERR_NO_DEPTH", {
            camera: name,
            cameras: gw.bench.backend
              .describe()
              .cameras.filter((c) => c.depth)
              .map((c) => c.name)
              .join(", "),
          });
        // on a shadow bench the bench's own frames: what the console watches is never compared with the twin
        const twin = gw.bench.twin;
        const capture = (cams: readonly string[], o: { depth: boolean }) =>
          twin ? twin.captureBench(cams, o) : gw.bench.backend.capture(cams, o);
        return image(req, reply, req.query.have, `${name}|${depth}`, async () => {
          const [f] = await capture([name], { depth });
          if (!f) throw new GatewayError("RB_ERR_UNKNOWN_CAMERA", { camera: name });
          const pic =
            depth && f.depthMm
              ? {
                  kind: "raw" as const,
                  width: f.depthMm.width,
                  height: f.depthMm.height,
                  channels: 3 as const,
                  data: depthColourMap(f.depthMm.data),
                }
              : f.rgb;
          return (await encodeImage(pic, "jpeg", 80)).data;
        });
      },
    );

    r.get(
      "/v1/admin/twin/cameras/:name/image",
      {
        schema: {
          params: z.object({ name: z.string().max(100) }),
          querystring: z.object({ have: z.coerce.number().int().optional() }),
        },
      },
      async (req, reply) => {
        const { name } = req.params;
        const twin = gw.bench.twin;
        if (!twin) throw new GatewayError("RB_ERR_NO_TWIN", { bench: gw.bench.name });
        cameraOr404(name);
        return image(req, reply, req.query.have, `twin|${name}`, async () => {
          const [f] = twin.captureTwin([name]);
          if (!f) throw new GatewayError("RB_ERR_UNKNOWN_CAMERA", { camera: name });
          return (await encodeImage(f.rgb, "jpeg", 80)).data;
        });
      },
    );

    const episodeOr404 = (id: string, url: string) => {
      const ep = gw.findEpisode(id);
      if (!ep) throw new GatewayError("RB_ERR_NOT_FOUND", { method: "GET", url });
      return ep;
    };

    r.get(
      "/v1/admin/episodes/:id/record",
      { schema: { params: z.object({ id: z.string().max(100) }) } },
      async (req, reply) => {
        const ep = episodeOr404(req.params.id, req.url);
        const path = ep.recordPath;
        if (!path || !existsSync(path)) throw new GatewayError("RB_ERR_NO_RECORD", { id: ep.id });
        return reply
          .type("application/octet-stream")
          .header("content-disposition", `attachment; filename="${ep.id}.mcap"`)
          .send(createReadStream(path));
      },
    );

    r.get(
      "/v1/admin/episodes/:id/grade",
      { schema: { params: z.object({ id: z.string().max(100) }) } },
      async (req) => {
        const ep = episodeOr404(req.params.id, req.url);
        if (!ep.isEnded) throw new GatewayError("RB_ERR_EPISODE_RUNNING", { id: ep.id });
        const path = ep.recordPath;
        if (!path || !existsSync(path)) throw new GatewayError("RB_ERR_NO_RECORD", { id: ep.id });
        const report = await gradeRecord(path);
        return {
          id: ep.id,
          agree: report.agree,
          differences: report.differences,
          recomputed: report.recomputed,
          notes: report.notes,
        };
      },
    );
  });
}
