package worker

import (
	"net/url"
	"sort"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// baselineEnv are the variables of the relay's environment every agent CLI
// gets: finding programs, the home and temporary folders, the user, the
// locale and terminal, and the per-user XDG roots.
var baselineEnv = []string{
	"PATH", "HOME", "SHELL", "USER", "LOGNAME",
	"LANG", "LANGUAGE", "TERM", "COLORTERM", "TZ",
	"TMPDIR", "TEMP", "TMP",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
	"XDG_RUNTIME_DIR", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
}

// baselinePrefixes are name prefixes passed like baselineEnv (locale).
var baselinePrefixes = []string{"LC_"}

// windowsEnv are the variables Windows programs need to start at all
// (compared without regard to case, as Windows does).
var windowsEnv = []string{
	"SystemRoot", "SystemDrive", "windir", "ComSpec", "PATHEXT", "OS",
	"USERPROFILE", "USERNAME", "USERDOMAIN", "HOMEDRIVE", "HOMEPATH",
	"APPDATA", "LOCALAPPDATA", "ProgramData", "ProgramFiles", "ProgramFiles(x86)",
	"ProgramW6432", "CommonProgramFiles", "CommonProgramFiles(x86)", "CommonProgramW6432",
	"PUBLIC", "ALLUSERSPROFILE", "COMPUTERNAME", "NUMBER_OF_PROCESSORS",
	"PROCESSOR_ARCHITECTURE", "PROCESSOR_IDENTIFIER",
}

// proxyEnv are proxy settings. One whose URL carries credentials is
// withheld whole.
var proxyEnv = []string{
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
	"http_proxy", "https_proxy", "all_proxy", "no_proxy",
}

// caEnv point programs at extra certificate authorities (a company proxy's).
var caEnv = []string{
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "NODE_USE_SYSTEM_CA",
	"REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
}

// ToolConfigEnv are the agent CLIs' own configuration roots. They hold
// where a CLI keeps its sign-in and settings, not secrets themselves.
var ToolConfigEnv = []string{
	"CLAUDE_CONFIG_DIR",               // Claude Code
	"CODEX_HOME",                      // Codex
	"GEMINI_CLI_HOME",                 // Gemini CLI
	"GEMINI_CLI_SYSTEM_SETTINGS_PATH", // Gemini CLI
	"GEMINI_CLI_SYSTEM_DEFAULTS_PATH", // Gemini CLI
	"OPENCODE_CONFIG",                 // OpenCode
	"OPENCODE_CONFIG_DIR",             // OpenCode
}

// neverPassed are removed even when named, because they change what the
// started program is (an Electron build would run as plain node).
var neverPassed = []string{"ELECTRON_RUN_AS_NODE"}

// ChildEnv builds the environment of an agent CLI from the relay's own
// environment (relayEnv, "NAME=value" entries): the named baseline (PATH,
// HOME, SHELL, USER, LOGNAME, locale, TERM, TZ, the temporary folders, the
// XDG roots, proxy and CA settings, on Windows the system variables), the
// tools' configuration roots (ToolConfigEnv), the variables the worker
// names in cfg.Env, then preset (the harness's own variables) and run (the
// run's CROSSCHAT_* variables), each later source overriding an earlier
// one. A proxy variable whose URL carries a user name or password is
// withheld whole, unless cfg.Env names it.
//
// withheld lists, sorted, the names in relayEnv that were not passed, so a
// failed run can say which one the CLI may have needed. goos decides
// whether names compare case-insensitively ("windows") or not.
func ChildEnv(relayEnv []string, cfg relay.WorkerConfig, run map[string]string, preset map[string]string, goos string) (env []string, withheld []string) {
	fold := func(s string) string { return s }
	if goos == "windows" {
		fold = strings.ToUpper
	}
	named := func(names ...[]string) map[string]bool {
		m := make(map[string]bool)
		for _, list := range names {
			for _, n := range list {
				m[fold(n)] = true
			}
		}
		return m
	}
	base := named(baselineEnv, caEnv, ToolConfigEnv)
	if goos == "windows" {
		for n := range named(windowsEnv) {
			base[n] = true
		}
	}
	proxies := named(proxyEnv)
	userNamed := named(cfg.Env)
	never := named(neverPassed)

	type entry struct{ name, value string }
	out := make(map[string]entry)
	passed := make(map[string]bool)
	var all []string
	seen := make(map[string]bool)
	for _, kv := range relayEnv {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		key := fold(name)
		if !seen[key] {
			seen[key] = true
			all = append(all, name)
		}
		pass := false
		switch {
		case never[key]:
		case userNamed[key]:
			pass = true
		case proxies[key]:
			pass = !hasCredentials(value)
		case base[key]:
			pass = true
		default:
			for _, p := range baselinePrefixes {
				if strings.HasPrefix(key, fold(p)) {
					pass = true
				}
			}
		}
		if pass {
			out[key] = entry{name, value}
			passed[key] = true
		} else {
			delete(out, key)
			passed[key] = false
		}
	}
	for _, src := range []map[string]string{preset, run} {
		for name, value := range src {
			out[fold(name)] = entry{name, value}
		}
	}
	for _, name := range all {
		if key := fold(name); !passed[key] {
			if _, set := out[key]; !set {
				withheld = append(withheld, name)
			}
		}
	}
	sort.Strings(withheld)
	env = make([]string, 0, len(out))
	for _, e := range out {
		env = append(env, e.name+"="+e.value)
	}
	sort.Strings(env)
	return env, withheld
}

// hasCredentials reports whether a proxy setting carries a user name or
// password (scheme://user:pass@host), or cannot be read safely.
func hasCredentials(value string) bool {
	v := strings.TrimSpace(value)
	if v == "" {
		return false
	}
	if !strings.Contains(v, "://") {
		// NO_PROXY lists and bare host:port values; an @ still means a user.
		return strings.Contains(v, "@")
	}
	u, err := url.Parse(v)
	if err != nil {
		return strings.Contains(v, "@")
	}
	return u.User != nil
}

// authEnv are, per harness, variables that carry a CLI's sign-in.
var authEnv = map[string][]string{
	"claude-code": {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"},
	"codex":       {"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_*"},
	"gemini":      {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GOOGLE_GENAI_USE_VERTEXAI"},
	"opencode":    {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"},
	"codewhale":   {"DEEPSEEK_API_KEY"},
	"zcode":       {"ZHIPU_API_KEY", "ZAI_API_KEY", "GLM_API_KEY"},
}

// AuthHint names the withheld variables that look like the harness's
// sign-in ("*" ends a prefix); for custom programs, any *_API_KEY. It
// returns "" when none was withheld.
func AuthHint(harness string, withheld []string) string {
	patterns, ok := authEnv[harness]
	if !ok {
		patterns = []string{"*_API_KEY"}
	}
	var hits []string
	for _, name := range withheld {
		up := strings.ToUpper(name)
		for _, p := range patterns {
			var match bool
			switch {
			case strings.HasPrefix(p, "*"):
				match = strings.HasSuffix(up, p[1:])
			case strings.HasSuffix(p, "*"):
				match = strings.HasPrefix(up, p[:len(p)-1])
			default:
				match = up == p
			}
			if match {
				hits = append(hits, name)
				break
			}
		}
	}
	if len(hits) == 0 {
		return ""
	}
	verb := "is"
	if len(hits) > 1 {
		verb = "are"
	}
	return "The relay's environment has " + strings.Join(hits, ", ") + ", which " + verb +
		" not passed to workers unless named. If the program needs it to sign in, add it to the worker's environment variables."
}

// noProxy is a run's NO_PROXY: the relay's own (NO_PROXY, else no_proxy,
// from relayEnv) with the host of the run's MCP URL added, so the run's
// connection to the relay, which carries its token, never goes through a
// proxy, one a working folder sets included (Gemini CLI loads a trusted
// folder's .gemini/.env for the variables its environment lacks).
func noProxy(relayEnv []string, mcpURL string) string {
	var list string
	for _, name := range []string{"no_proxy", "NO_PROXY"} { // NO_PROXY wins
		for _, kv := range relayEnv {
			if v, ok := strings.CutPrefix(kv, name+"="); ok && v != "" {
				list = v
			}
		}
	}
	u, err := url.Parse(mcpURL)
	if err != nil || u.Hostname() == "" {
		return list
	}
	host := u.Hostname()
	for _, h := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(h), host) {
			return list
		}
	}
	if list == "" {
		return host
	}
	return list + "," + host
}
