/**
 * Serial port discovery for `robot-gateway devices`. serialport's `SerialPort.list()` reads
 * udev on Linux (it runs `udevadm`); where udevadm is missing (containers, minimal images) this
 * falls back to scanning /dev for ttyUSB* / ttyACM* and says so in `method` and `note`.
 */
import { readdir } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { existsSync } from "node:fs";

export interface SerialPortInfo {
  path: string;
  manufacturer?: string;
  serialNumber?: string;
  vendorId?: string;
  productId?: string;
}

export interface DiscoveryResult {
  ports: SerialPortInfo[];
  /** how the list was made */
  method: "udev" | "dev-scan";
  /** why the fallback was used, or what failed */
  note?: string;
}

export interface DiscoveryOptions {
  /** directory to scan in the fallback (default /dev; tests pass a temp dir) */
  devDir?: string;
  /** where to look for udevadm (default: $PATH split, passed in by the caller) */
  searchPath?: string;
  /** the serialport lister (default: SerialPort.list, loaded lazily) */
  list?: () => Promise<SerialPortInfo[]>;
}

const PATTERN = /^tty(USB|ACM)\d+$/;

function hasUdevadm(searchPath: string): boolean {
  return searchPath
    .split(delimiter)
    .filter(Boolean)
    .some((d) => existsSync(join(d, "udevadm")));
}

/** Scan a directory for USB serial devices (ttyUSB*, ttyACM*). */
export async function scanDev(devDir = "/dev"): Promise<SerialPortInfo[]> {
  const names = await readdir(devDir).catch(() => [] as string[]);
  return names
    .filter((n) => PATTERN.test(n))
    .sort()
    .map((n) => ({ path: join(devDir, n) }));
}

/** List serial ports: udev through serialport when possible, else a /dev scan. */
export async function listSerialPorts(opts: DiscoveryOptions = {}): Promise<DiscoveryResult> {
  const searchPath = opts.searchPath ?? "/usr/sbin:/usr/bin:/sbin:/bin";
  if (!hasUdevadm(searchPath)) {
    return {
      ports: await scanDev(opts.devDir),
      method: "dev-scan",
      note: "udevadm not found, so no vendor/serial details: scanned for ttyUSB*/ttyACM* (install the udev package for details)",
    };
  }
  try {
    const list =
      opts.list ??
      (async () => {
        const { SerialPort } = await import("serialport");
        return (await SerialPort.list()).map((p) => ({
          path: p.path,
          ...(p.manufacturer ? { manufacturer: p.manufacturer } : {}),
          ...(p.serialNumber ? { serialNumber: p.serialNumber } : {}),
          ...(p.vendorId ? { vendorId: p.vendorId } : {}),
          ...(p.productId ? { productId: p.productId } : {}),
        }));
      });
    return { ports: await list(), method: "udev" };
  } catch (e) {
    return {
      ports: await scanDev(opts.devDir),
      method: "dev-scan",
      note: `serialport list failed (${(e as Error).message}); scanned for ttyUSB*/ttyACM*`,
    };
  }
}
