/**
 * ApiError is the one error shape the UI sees, whichever way a call failed:
 * a bridge response body `{"error": code, "message": text, "details"?}`, a
 * Wails rejection (the Go error text, "code: message"), or a network failure.
 */
export class ApiError extends Error {
  readonly code: string;
  readonly details?: Record<string, unknown>;
  readonly status?: number;

  constructor(code: string, message: string, details?: Record<string, unknown>, status?: number) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = details;
    this.status = status;
  }
}

/** Codes the UI reacts to, besides showing the message. */
export const ErrUnauthorized = "unauthorized";
export const ErrNetwork = "network";
export const ErrInternal = "internal_error";
/** The bridge refused an action that is only allowed from this computer. */
export const ErrLocalOnly = "local_only";

const GENERIC = "The relay could not complete this request.";

// "code: message" as produced by relay.Error.Error().
const CODED = /^([a-z][a-z0-9_]{1,60}): ([\s\S]*)$/;

/** toApiError normalizes anything a call can reject with. */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (typeof e === "string") {
    const m = CODED.exec(e.trim());
    if (m) return new ApiError(m[1], m[2].trim() || GENERIC);
    return new ApiError(ErrInternal, e.trim() || GENERIC);
  }
  if (e && typeof e === "object") {
    const o = e as Record<string, unknown>;
    // Bridge body {error, message, details} or a formatted Wails error {code, message}.
    const code = typeof o.error === "string" ? o.error : typeof o.code === "string" ? o.code : "";
    if (code && typeof o.message === "string") {
      const details = o.details && typeof o.details === "object" ? (o.details as Record<string, unknown>) : undefined;
      return new ApiError(code, o.message || GENERIC, details, typeof o.status === "number" ? o.status : undefined);
    }
    if (e instanceof TypeError) {
      return new ApiError(ErrNetwork, "Cannot reach the relay. Is it still running?");
    }
    if (e instanceof Error) return toApiError(e.message);
  }
  return new ApiError(ErrInternal, GENERIC);
}

/** errorMessage is the text to show for any rejection. */
export function errorMessage(e: unknown): string {
  return toApiError(e).message;
}
