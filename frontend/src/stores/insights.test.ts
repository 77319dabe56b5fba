import { afterEach, describe, expect, it, vi } from "vitest";
import { activityInsights, fakeApi, summary } from "../test/fakes";
import { activityFeed, createFeed } from "./insights";

afterEach(() => vi.useRealTimers());

describe("insight feeds", () => {
  it("load on start, reload on task changes at most once per pause, and not on other changes", async () => {
    vi.useFakeTimers();
    const api = fakeApi();
    const feed = activityFeed(api, { throttleMs: 1000, refreshMs: 0 });
    feed.start();
    await vi.runOnlyPendingTimersAsync();
    expect(api.insights.activity).toHaveBeenCalledTimes(1);
    expect(feed.state.data?.throughput).toHaveLength(24);

    api.emit({ type: "agent", agent: undefined });
    api.emit({ type: "event" });
    await vi.advanceTimersByTimeAsync(2000);
    expect(api.insights.activity).toHaveBeenCalledTimes(1);

    // Ten changes in a burst: one reload at once, one when the pause ends.
    for (let i = 0; i < 10; i++) api.emit({ type: "task", task: summary({ id: `t${i}` }) });
    expect(api.insights.activity).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(999);
    expect(api.insights.activity).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(api.insights.activity).toHaveBeenCalledTimes(3);
    await vi.advanceTimersByTimeAsync(5000);
    expect(api.insights.activity).toHaveBeenCalledTimes(3);

    feed.stop();
    api.emit({ type: "task", task: summary() });
    await vi.advanceTimersByTimeAsync(2000);
    expect(api.insights.activity).toHaveBeenCalledTimes(3);
    expect(api.listeners).toBe(0);
  });

  it("sends the viewer's offset from UTC", async () => {
    const api = fakeApi();
    const feed = activityFeed(api, { refreshMs: 0 });
    await feed.reload();
    expect(api.insights.activity).toHaveBeenCalledWith(-new Date().getTimezoneOffset());
  });

  it("keeps the latest request's answer when answers overtake each other", async () => {
    const api = fakeApi();
    const answers: ((v: number) => void)[] = [];
    const feed = createFeed(api, () => new Promise<number>((res) => answers.push(res)), { refreshMs: 0 });
    const first = feed.reload();
    const second = feed.reload();
    answers[1]!(2);
    await second;
    answers[0]!(1);
    await first;
    expect(feed.state.data).toBe(2);
  });

  it("shows an error and keeps the last answer", async () => {
    const api = fakeApi({ insights: activityInsights({ at: "kept" }) });
    const feed = activityFeed(api, { refreshMs: 0 });
    await feed.reload();
    vi.mocked(api.insights.activity).mockRejectedValueOnce(new Error("relay gone"));
    await feed.reload();
    expect(feed.state.error).toContain("relay gone");
    expect(feed.state.data?.at).toBe("kept");
  });
});
