// End to end, mesh trust: a second relay ("gpu-box") joins the embedded NATS
// server of the relay under test with the URL `mesh invite` prints, trusts
// it, and its operator sends a task to an agent there. On the relay under
// test, the Mesh page shows gpu-box pending with its key fingerprint, the
// task held, and Trust / Block; Trust delivers the held task.
// Run by e2e/dashboard.mjs on its mesh relay (the --public-url one).
import { spawn, execFileSync } from "node:child_process";
import { join } from "node:path";

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

export async function runMeshTrust({ page, bin, tmp, log, base, port, dataDir, freePort, poll, shot, say, check, setStep, track }) {
  const cli = (...args) => execFileSync(bin, args, { encoding: "utf8" });
  const loc = ["--port", String(port), "--data-dir", dataDir];

  setStep("mesh trust: invite and a second relay");
  const invite = JSON.parse(cli("mesh", "invite", "--json", ...loc));
  check(invite.url.startsWith("nats://crosschat:") && invite.command.includes("--nats"), `mesh invite: ${JSON.stringify(invite)}`);
  const bee = JSON.parse(cli("agents", "add", "bee", "--name", "Bee", "--model", "test-model", "--capability", "text-output", "--json", ...loc));
  check(bee.token, "agents add bee gave no token");
  const portB = await freePort();
  const baseB = `http://127.0.0.1:${portB}`;
  const dataB = join(tmp, "data-gpu-box");
  const other = spawn(bin, ["serve", "--port", String(portB), "--data-dir", dataB, "--nats", invite.url, "--nats-name", "gpu-box"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  track(other);
  other.stdout.pipe(log);
  other.stderr.pipe(log);
  await poll("GET /health of gpu-box", async () => (await fetch(`${baseB}/health`)).ok, 30000);
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

  setStep("mesh trust: the Mesh page with a pending relay and a held task");
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

  setStep("mesh trust: Trust delivers the held task");
  await row.getByRole("button", { name: "Trust gpu-box" }).click();
  await row.getByText("Trusted", { exact: true }).waitFor({ timeout: 20000 });
  await held.waitFor({ state: "detached", timeout: 20000 });
  const got = await bridgeCall(base, cli("token", "--data-dir", dataDir).trim(), "Tasks.Get", [task.id]);
  check(got.task.senderSlug === "operator@gpu-box" && got.task.recipientSlug === "bee", `delivered task: ${JSON.stringify(got.task).slice(0, 300)}`);
  await shot(page, "22-mesh-trusted");
  await page.setViewportSize({ width: 1280, height: 800 });
  say("trusting gpu-box delivered its held task");
}
