import { afterEach, describe, expect, it } from "vitest";
import { ensureUsableLanguage, FALLBACK_LANGUAGE, usableLanguage } from "./locale";

describe("ensureUsableLanguage", () => {
  afterEach(() => {
    delete (navigator as unknown as Record<string, unknown>).language;
  });

  it("replaces a language tag Intl refuses (a webview under LANG=C)", () => {
    Object.defineProperty(navigator, "language", { value: "C", configurable: true });
    expect(() => new Intl.NumberFormat(navigator.language)).toThrow(RangeError);
    expect(ensureUsableLanguage()).toBe(FALLBACK_LANGUAGE);
    expect(() => new Intl.NumberFormat(navigator.language)).not.toThrow();
  });

  it("keeps a language Intl accepts", () => {
    Object.defineProperty(navigator, "language", { value: "de-CH", configurable: true });
    expect(ensureUsableLanguage()).toBe("de-CH");
    expect(usableLanguage("C")).toBe(false);
    expect(usableLanguage("")).toBe(false);
  });
});
