// End to end, mesh trust: a second relay ("gpu-box") joins the embedded NATS
// server of the relay under test with the URL `mesh invite` prints, trusts
// it, and its operator sends a task to an agent there. On the relay under
// test, the Mesh page shows gpu-box pending with its key fingerprint, the
// task held, and Trust / Block; Trust delivers the held task.
// Run by e2e/dashboard.mjs on its mesh relay (the --public-url one).
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { say, check, freePort, poll } from "./lib.mjs";

/** bridgeCall calls a bound method over the relay's HTTP bridge. */
async function bridgeCall(base, token, target, args) {
  const res = await fetch(`${base}/bridge/${target}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify(args),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${target}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * runMeshTrust runs the scenario against the relay at base (port, dataDir)
 * embedding NATS, on page signed in to it; run is the e2eRun (lib.mjs) that
 * starts and stops gpu-box.
 */
export async function runMeshTrust({ page, run, base, port, dataDir, shot }) {
  const { bin, tmp } = run;
  const cli = (...args) => execFileSync(bin, args, { encoding: "utf8" });
  const loc = ["--port", String(port), "--data-dir", dataDir];

  run.step = "mesh trust: invite and a second relay";
  const invite = JSON.parse(cli("mesh", "invite", "--json", ...loc));
  check(invite.url.startsWith("nats://crosschat:") && invite.command.includes("--nats"), `mesh invite: ${JSON.stringify(invite)}`);
  const bee = JSON.parse(cli("agents", "add", "bee", "--name", "Bee", "--model", "test-model", "--capability", "text-output", "--json", ...loc));
  check(bee.token, "agents add bee gave no token");
  const portB = await freePort();
  const baseB = `http://127.0.0.1:${portB}`;
  const dataB = join(tmp, "data-gpu-box");
  await run.startRelay(["--port", String(portB), "--data-dir", dataB, "--nats", invite.url, "--nats-name", "gpu-box"], baseB, "gpu-box");
  const locB = ["--port", String(portB), "--data-dir", dataB];
  const tokenB = cli("token", "--data-dir", dataB).trim();
  await poll("gpu-box trusts the relay under test", async () => {
    try {
      return cli("mesh", "trust", "e2e-relay", ...locB).includes("is trusted");
    } catch {
      return false;
    }
  }, 30000, 300);
  const task = await poll("gpu-box's operator posts to bee", async () => {
    try {
      return await bridgeCall(baseB, tokenB, "Tasks.Post", [{ recipientSlug: "bee", title: "Render the demo scene", instructions: "Render it at 4K." }]);
    } catch {
      return null;
    }
  }, 30000, 300);
  say(`gpu-box posted ${task.id} to bee`);

  run.step = "mesh trust: the Mesh page with a pending relay and a held task";
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Mesh" }).click();
  const row = page.locator('[data-test="mesh-relays"] [data-relay="gpu-box"]');
  await row.getByText("Pending approval").waitFor({ timeout: 20000 });
  check(/SHA256:/.test(await row.innerText()), "the pending relay shows no key fingerprint");
  const held = page.locator(`[data-held="${task.id}"]`);
  await held.waitFor({ timeout: 20000 });
  check((await held.innerText()).includes("operator@gpu-box"), `the held task does not name its sender with its relay: ${await held.innerText()}`);
  await row.getByRole("button", { name: "Block gpu-box" }).waitFor();
  await shot(page, "21-mesh-pending-held");

  run.step = "mesh trust: Trust delivers the held task";
  await row.getByRole("button", { name: "Trust gpu-box" }).click();
  await row.getByText("Trusted", { exact: true }).waitFor({ timeout: 20000 });
  await held.waitFor({ state: "detached", timeout: 20000 });
  const got = await bridgeCall(base, cli("token", "--data-dir", dataDir).trim(), "Tasks.Get", [task.id]);
  check(got.task.senderSlug === "operator@gpu-box" && got.task.recipientSlug === "bee", `delivered task: ${JSON.stringify(got.task).slice(0, 300)}`);
  await shot(page, "22-mesh-trusted");
  await page.setViewportSize({ width: 1280, height: 800 });
  say("trusting gpu-box delivered its held task");
}
