package cli

// verbTable is the help of every verb: adding a verb to the dispatcher
// (or an action to a group's verbAction) is one entry here.
var verbTable = []verb{
	{name: "serve", args: "[flags]", summary: "run the relay without a window; the dashboard is served at /",
		example: "crosschat-relay serve --port 4319 --data-dir ~/relay-b"},
	{name: "version", summary: "print the version (also --version, -v)", example: "crosschat-relay version"},
	{name: "help", args: "[VERB]", maxArgs: 2, summary: "this help, or a verb's (also --help, -h)", example: "crosschat-relay help send"},

	// Project folders as addresses (docs/live-sessions.md).
	{name: "register", args: "[DIR] [--id ID]", maxArgs: 1, summary: "make a project folder an address on the local relay; prints its id",
		about: `DIR (default: the current folder) becomes a project: its agent is created on the
local relay once, and its token kept in your own config folder (owner-only, never
inside the project). The id comes from --id, else CROSSCHAT_PROJECT_ID, else the
folder's name, normalised ("My Project!" → my-project). A folder inside a registered
project is that project (as git finds .git): register prints the project's id, and
--id makes the folder a project of its own. An explicit id (--id or
CROSSCHAT_PROJECT_ID) on a folder registered under another id moves the folder to
the new id; the old one is retired. A blank id is refused.`,
		example: "crosschat-relay register ~/src/api\ncrosschat-relay register --id billing-api"},
	{name: "send", args: "ID MESSAGE [--from ID] [--title T] [--priority low|normal|urgent]", maxArgs: 2,
		summary: "post MESSAGE as a task to the project ID and return at once; prints the task id",
		about: `The task is sent by the project --from ID names, else by CROSSCHAT_PROJECT_ID's,
else by the current folder's (the nearest registered folder at or above it). A
folder in no project is refused: register it first. --from operator sends as you,
the operator, as the dashboard's New task does (a worker runs only your tasks unless
you allow others); it needs the relay's admin token (--data-dir, or
CROSSCHAT_API_TOKEN). MESSAGE "-" reads standard input (at most
40,000 bytes). ID must be a project registered on this computer (crosschat-relay
projects list); an agent of another kind (made by hand, enrolled with an invite,
on another relay) needs --agent. Run inside a live session (--session, else
CLAUDE_CODE_SESSION_ID, which Claude Code sets) the task is that session's: its
answers reach that session alone.`,
		example: `crosschat-relay send api "Rebase on main, then run the tests."
echo "a longer message" | crosschat-relay send api - --title "Release notes" --priority urgent
crosschat-relay send builder "List the files" --agent --from operator`},
	{name: "monitor", args: "[ID] [--format task|message]", maxArgs: 1,
		summary: "print one line per task or update of a project (for a session's Monitor tool)",
		about: `Follows the push stream of the project ID (from any folder), else of the project
of the current folder or CROSSCHAT_PROJECT_ID, else of the agent whose token is in
CROSSCHAT_TOKEN. Prints exactly one line per event and nothing else on stdout:
  CROSSCHAT_TASK {"taskId","title","sender","priority","message","conversationId"}
  CROSSCHAT_UPDATE {"taskId","title","sender","kind","message","conversationId"}
or with --format message one line per task or update:
  CROSSCHAT_MESSAGE {"from","source_project_id","to","text","taskId","kind","verification",
                     "result","replySession","conversationId","hops"}
It reconnects by itself and never prints an event twice; a project's cursor is kept
in your config folder. --session (default CLAUDE_CODE_SESSION_ID) leaves out the
answers meant for the project's other sessions.`,
		example: "crosschat-relay monitor api --format message"},
	{name: "channel", args: "[ID]", maxArgs: 1,
		summary: "a stdio MCP server for Claude Code: the relay's tools plus a channel event per task or update",
		about: `Put it in a project's .mcp.json (the Claude Code plugin does). The project is ID,
else the current folder's or CROSSCHAT_PROJECT_ID's, else the agent of
CROSSCHAT_TOKEN; --register registers the current folder first when it is in no
project. Start Claude Code with --dangerously-load-development-channels
server:crosschat while channels are in preview.`,
		example: "crosschat-relay channel api"},
	{name: "projects", summary: "the project folders registered on this computer",
		example: "crosschat-relay projects list"},
	{name: "projects list", summary: "each project: id, folder, online or offline, last seen",
		example: "crosschat-relay projects list --json"},
	{name: "projects remove", args: "ID", maxArgs: 1,
		summary: "forget a project: its agent retired (token revoked, name kept), its open tasks blocked",
		about: `The folder is no longer an address. Its agent leaves the agent list, its token stops
working and nobody else can take its name; its open tasks are blocked, each sender
told (a sender may requeue one, or cancel it). Registering the folder again brings
the project back with a new token.`,
		example: "crosschat-relay projects remove old-api"},
	{name: "claude-plugin", args: "[--dir DIR] [--print]", summary: "install the Claude Code plugin (every project folder an address)",
		about: claudePluginAbout, example: "crosschat-relay claude-plugin"},
	{name: "sessions", summary: "the Claude Code sessions and Codex threads on this computer (no relay needed: read from their files)",
		example: "crosschat-relay sessions list --tool codex"},
	{name: "sessions list", summary: "every session with its id, last activity, name and folder",
		example: "crosschat-relay sessions list"},
	{name: "sessions show", args: "ID|NAME", maxArgs: 1, summary: "one session by id or exact name",
		example: `crosschat-relay sessions show "release prep"`},

	// The relay's own objects.
	{name: "agents", summary: "the relay's agents", example: "crosschat-relay agents list"},
	{name: "agents add", args: "SLUG --name N --model M --capability C...", maxArgs: 1,
		summary: "create an agent; prints its token once, with setup lines",
		example: "crosschat-relay agents add builder --name Builder --model claude --capability code-execution"},
	{name: "agents list", summary: "every agent with presence and token state", example: "crosschat-relay agents list --json"},
	{name: "invites", summary: "invite codes an agent enrolls itself with", example: "crosschat-relay invites create --uses 1 --expires 24h"},
	{name: "invites create", args: "[--uses N] [--expires 24h] [--name N] [--role R]",
		summary: "an invite code and the message to paste into the agent's chat",
		example: "crosschat-relay invites create --uses 1 --expires 24h --name Reviewer"},
	{name: "tasks", summary: "the relay's tasks", example: "crosschat-relay tasks list --status blocked"},
	{name: "tasks list", args: "[--status S] [--agent A] [--query Q] [--limit N]", summary: "tasks, newest change first",
		example: "crosschat-relay tasks list --status queued,claimed --agent api"},
	{name: "tasks show", args: "ID", maxArgs: 1, summary: "one task: its state, instructions, timeline and result (ID may be 8 characters or more of it)",
		about: `ID is a task's id or a part of it, 8 characters or more, that one task's id holds.
Ids are time-ordered (UUIDv7): tasks made close together share the start of
their ids, so give the END of an id (its last 8 characters tell tasks apart).`,
		example: "crosschat-relay tasks show 01a25120-a6f0-78e0-be0e-ad9ff9936d1c\ncrosschat-relay tasks show ad9ff9936d1c"},
	{name: "workers", summary: "agents that run their CLI for each task, unattended", example: "crosschat-relay workers list"},
	{name: "workers list", summary: "workers with state, limits and last run", example: "crosschat-relay workers list"},
	{name: "workers set", args: "SLUG --harness ID --workdir DIR [flags]", maxArgs: 1,
		summary: "create or change an agent's worker",
		about: `The relay looks for the CLI (claude, codex, gemini, …) on its own PATH, the PATH of
the process that runs the relay (the app, serve or the service), not this terminal's;
crosschat-relay harnesses shows which PATH that is and what it found there. A CLI
elsewhere: give its path with --command, or start the relay with that folder on
its PATH. A new worker needs --harness and --workdir. On an agent that has a worker,
only the flags given change: the others keep their values, and a repeatable flag
given (--allow-sender, --env, …) replaces its whole list. Another --harness looks
its CLI up again and drops the old one's --command, --arg, --prompt and session
unless they are given too; the sandbox stays as it was.`,
		example: "crosschat-relay workers set builder --harness claude-code --workdir ~/src/app --timeout 30m\ncrosschat-relay workers set builder --allow-sender operator --allow-sender api"},
	{name: "workers remove", args: "SLUG", maxArgs: 1, summary: "remove one worker; its agent's chat sessions get its tasks again",
		example: "crosschat-relay workers remove builder"},
	{name: "workers pause", summary: "stop claiming new tasks (a running one finishes)", example: "crosschat-relay workers pause"},
	{name: "workers resume", summary: "claim tasks again", example: "crosschat-relay workers resume"},
	{name: "harnesses", summary: "the agent CLIs the relay finds on its PATH, each version against the tested range",
		about: `Detection runs in the relay, on the relay's own PATH (shown above the table), not on
this terminal's. To use a CLI found elsewhere: workers set … --command PATH, or
start the relay with that folder on its PATH.`,
		example: "crosschat-relay harnesses"},

	// The relay process.
	{name: "status", summary: "is the relay running: pid, version, uptime, address, counts (exit 3: not running)",
		about: `The relay is the one serving the data folder (--data-dir, CROSSCHAT_DATA_DIR): its
run file there names the address. A relay answering at a --port of another data
folder is named in the note, and status exits 3: pass that relay's --data-dir.`,
		example: "crosschat-relay status --data-dir ~/relay-b"},
	{name: "token", summary: "print the admin token", example: "crosschat-relay token"},
	{name: "quit", summary: "stop the running relay (the app or serve)", example: "crosschat-relay quit"},
	{name: "open", summary: "open the dashboard in your browser", example: "crosschat-relay open"},
	{name: "logs", args: "[-f] [-n N]", summary: "the last lines of the relay's log file (-f follows it)",
		example: "crosschat-relay logs -f -n 20"},
	{name: "autostart", summary: "start the app, hidden, when you log in", example: "crosschat-relay autostart enable"},
	{name: "autostart enable", summary: "start the app when you log in (with this command's --host, --port, --data-dir)",
		about: `The app is the window build: a headless build (make install, the headless package)
refuses, as its login entry would fail; crosschat-relay service install runs serve
at login instead.`,
		example: "crosschat-relay autostart enable"},
	{name: "autostart disable", summary: "do not start the app when you log in", example: "crosschat-relay autostart disable"},
	{name: "autostart status", summary: "whether the app starts when you log in", example: "crosschat-relay autostart status"},
	{name: "service", summary: "run serve under the service manager (systemd, launchd, the task scheduler)",
		example: "crosschat-relay service install --port 4318"},
	{name: "service install", args: "[--system] [--write-only]", summary: "install and start the service (restarted on failure)",
		example: "crosschat-relay service install"},
	{name: "service uninstall", args: "[--system] [--write-only]", summary: "stop and remove the service",
		example: "crosschat-relay service uninstall"},
	{name: "service status", args: "[--system]", summary: "whether the service is installed, and its state",
		example: "crosschat-relay service status"},
	{name: "import-upstream", args: "[--from PATH]", summary: "import the upstream Crosschat Relay's relay.db (relay stopped)",
		example: "crosschat-relay import-upstream --from ~/old/relay.db"},
	{name: "bench", args: "[flags]", summary: "measure a relay with MCP load over real HTTP",
		about: benchAbout, example: "crosschat-relay bench --rounds 3"},

	// The mesh (docs/mesh.md).
	{name: "mesh", summary: "relays on several computers joined over NATS", example: "crosschat-relay mesh status"},
	{name: "mesh status", summary: "this relay's link, outbox, lag and every relay", example: "crosschat-relay mesh status"},
	{name: "mesh agents", summary: "every agent of the mesh with its relay", example: "crosschat-relay mesh agents"},
	{name: "mesh relays", summary: "every relay seen, with its key fingerprint and trust state, and the tasks held",
		example: "crosschat-relay mesh relays"},
	{name: "mesh trust", args: "NAME|ID [--fingerprint SHA256:…]", maxArgs: 1, summary: "admit a relay (its held tasks are delivered)",
		about: `Exactly the key with the fingerprint given is pinned (the relay's only key without
--fingerprint; a relay that shows two keys needs it). The same verb settles a key
change: the pinned key's fingerprint keeps it, the new key's takes it; what the
relay sent meanwhile, held, is then checked against the key pinned and delivered
in order. A relay that renamed itself is trusted again under its new name.`,
		example: "crosschat-relay mesh trust gpu-box --fingerprint SHA256:…"},
	{name: "mesh block", args: "NAME|ID", maxArgs: 1, summary: "refuse a relay; its tasks not started are cancelled",
		about: `What the relay sends from then on is kept, marked and never delivered. Its tasks
still queued here are cancelled at once (each recipient is told), so none reaches a
worker; a task already being worked on is left to finish.`,
		example: "crosschat-relay mesh block gpu-box"},
	{name: "mesh names", summary: "every other relay's agent by the name it has here, then the name contests",
		about: `A remote agent's name is pinned when a trusted relay first shows it: its plain
slug if no agent here had it, else SLUG@RELAY (SLUG@RELAY-ID when the relay has no
label of its own). A slug more than one relay shows is a contest, listed here and on
the Mesh page, and left to you (mesh name).`,
		example: "crosschat-relay mesh names --json"},
	{name: "mesh name", args: "SLUG --relay NAME|ID", maxArgs: 1, summary: "give the plain name SLUG to that relay's agent SLUG",
		about: `The agent that had the plain name takes its qualified name (SLUG@ITS-RELAY), and
every task, update and worker's allowed senders that named either agent are renamed
with it: each keeps naming the agent it named, and a worker that allowed the old
holder still allows it, under its new name, never the new holder.`,
		example: "crosschat-relay mesh name alice --relay relay-c"},
	{name: "mesh invite", summary: "the command another computer runs to join this mesh",
		about: `With an embedded NATS server the command carries a new invite: it lets one relay in,
once, within 24 hours, to present its own key; that relay then connects with its key
and may use only its own subjects. The invite is no password of the server.`,
		example: "crosschat-relay mesh invite"},
	{name: "mesh nats-config", summary: "the NATS users of this relay and the relays it trusts, for an external cluster",
		about: `Prints nats-server configuration: one user per relay (its key), allowed only its own
subjects and never to delete or purge the stream, the consumers or the directory.
Include it in the servers' configuration and reload them; --json gives the same as
data (for user JWTs). Run it again after trusting or blocking a relay.`,
		example: "crosschat-relay mesh nats-config > crosschat-users.conf"},
}
