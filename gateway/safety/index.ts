/** The safety supervisor shared by every backend: profile, pre-check, runtime monitor, e-stop. */
export { EStopLatch, type EStopListener, type EStopRecord } from "./estop.ts";
export {
  type EndReason,
  type MonitorVerdict,
  SafetyMonitor,
  type StopCause,
  type StopVerdict,
} from "./monitor.ts";
export {
  type ClipEntry,
  clipRows,
  type PrecheckInput,
  type PrecheckResult,
  type PrecheckStats,
  precheckChunk,
  rowOfSample,
  type Violation,
  type ViolationKind,
  violationDetails,
} from "./precheck.ts";
export {
  type EffectiveLimits,
  type KeepOut,
  parseSafetyProfile,
  resolveLimits,
  SafetyConfigError,
  type SafetyProfile,
  type SafetyProfileInput,
  SafetyProfileSchema,
  type StopEvent,
} from "./profile.ts";
