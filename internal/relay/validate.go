package relay

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on strings and lists, in characters (runes) and entries.
const (
	MaxShortText      = 500
	MaxLongText       = 40000
	MaxDetails        = 2000
	MaxCapability     = 80
	MaxCapabilities   = 32
	MaxLabel          = 120
	MaxInviteCode     = 200
	MaxInviteHours    = 720
	MaxInviteUses     = 1000
	MaxResult         = 40000
	MaxChainLimit     = 10
	MaxUpdatesLimit   = 100
	DefaultReadLimit  = 25
	DefaultTaskLimit  = 100
	MaxListLimit      = 500
	DefaultEventLimit = 50
)

// isSlug reports whether s follows the slug rule, ^[a-z0-9][a-z0-9._:-]{1,79}$
// (a loop: slugs are checked on every call, and a regexp costs more).
func isSlug(s string) bool {
	if len(s) < 2 || len(s) > 80 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == ':' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// IsQualified reports whether s is a qualified remote name, slug@relay:
// one @ between two parts that each follow the slug rule.
func IsQualified(s string) bool {
	i := strings.IndexByte(s, '@')
	return i > 0 && isSlug(s[:i]) && isSlug(s[i+1:])
}

// NormalizeSlug trims and lowercases s and checks it against the slug rule:
// 2–80 characters, lowercase letters, digits, dots, underscores, colons and
// hyphens, starting with a letter or digit.
//
// A qualified name, slug@relay, names an agent of another relay of the mesh
// (both parts follow the slug rule); it is accepted wherever an agent is
// named, and refused where an agent is registered (see checker.agent).
func NormalizeSlug(field, s string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	if n == "" {
		return "", Errorf(EInvalidRequest, "%s: is required.", field)
	}
	if !isSlug(n) && !IsQualified(n) {
		return "", Errorf(EInvalidRequest, "%s: must be 2–80 characters of lowercase letters, digits, dots, underscores, colons or hyphens, starting with a letter or digit.", field)
	}
	return n, nil
}

// Text trims s and checks that it has min..max characters.
func Text(field, s string, min, max int) (string, error) {
	t := strings.TrimSpace(s)
	n := utf8.RuneCountInString(t)
	if !utf8.ValidString(t) {
		return "", Errorf(EInvalidRequest, "%s: must be valid UTF-8 text.", field)
	}
	if n < min {
		if min == 1 {
			return "", Errorf(EInvalidRequest, "%s: is required.", field)
		}
		return "", Errorf(EInvalidRequest, "%s: must be at least %d characters.", field, min)
	}
	if n > max {
		return "", Errorf(EInvalidRequest, "%s: must be at most %d characters (got %d).", field, max, n)
	}
	return t, nil
}

// Capabilities trims, de-duplicates and sorts a capability list and checks
// its bounds; min is 0 or 1.
func Capabilities(field string, caps []string, min int) ([]string, error) {
	if len(caps) > MaxCapabilities {
		return nil, Errorf(EInvalidRequest, "%s: at most %d entries (got %d).", field, MaxCapabilities, len(caps))
	}
	seen := make(map[string]bool, len(caps))
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		t, err := Text(field+" entry", c, 1, MaxCapability)
		if err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) < min {
		return nil, Errorf(EInvalidRequest, "%s: at least %d entry is required.", field, min)
	}
	sort.Strings(out)
	return out, nil
}

// Priority checks p, treating 0 as the default (normal).
func Priority(field string, p int) (int, error) {
	if p == 0 {
		return PriorityNormal, nil
	}
	if p < PriorityLow || p > PriorityUrgent {
		return 0, Errorf(EInvalidRequest, "%s: must be 1 (low), 2 (normal) or 3 (urgent).", field)
	}
	return p, nil
}

// LeaseSeconds checks s, treating 0 as the default.
func LeaseSeconds(field string, s int) (int, error) {
	if s == 0 {
		return DefaultLeaseSeconds, nil
	}
	if s < MinLeaseSeconds || s > MaxLeaseSeconds {
		return 0, Errorf(EInvalidRequest, "%s: must be between %d and %d seconds.", field, MinLeaseSeconds, MaxLeaseSeconds)
	}
	return s, nil
}

// Clamp returns v limited to lo..hi, with def used when v is 0 or negative.
func Clamp(v, def, lo, hi int) int {
	if v <= 0 {
		v = def
	}
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// checker normalizes fields in turn and keeps the first error: once a check
// fails, the later ones leave their fields alone.
type checker struct{ err error }

func (c *checker) slug(field string, s *string) {
	if c.err == nil {
		*s, c.err = NormalizeSlug(field, *s)
	}
}

func (c *checker) text(field string, s *string, min, max int) {
	if c.err == nil {
		*s, c.err = Text(field, *s, min, max)
	}
}

// optText checks *p when it is set, replacing it with a pointer to the
// normalized copy so the caller's string is never written.
func (c *checker) optText(field string, p **string, min, max int) {
	if c.err == nil && *p != nil {
		v := **p
		c.text(field, &v, min, max)
		*p = &v
	}
}

func (c *checker) caps(field string, caps *[]string, min int) {
	if c.err == nil {
		*caps, c.err = Capabilities(field, *caps, min)
	}
}

func (c *checker) priority(field string, p *int) {
	if c.err == nil {
		*p, c.err = Priority(field, *p)
	}
}

func (c *checker) taskID(field string, s *string) {
	if c.err == nil {
		*s, c.err = TaskID(field, *s)
	}
}

// agent checks the fields every way of making an agent shares; details is
// skipped when nil.
func (c *checker) agent(slug, displayName, modelSlug *string, caps *[]string, details *string) {
	c.slug("slug", slug)
	if c.err == nil && IsQualified(*slug) {
		c.fail(Errorf(EInvalidRequest, "slug: “%s” names an agent of another relay (slug@relay); a new agent's slug has no @.", *slug))
	}
	c.text("displayName", displayName, 1, MaxShortText)
	c.text("modelSlug", modelSlug, 1, MaxShortText)
	c.caps("capabilities", caps, 1)
	if details != nil {
		c.text("details", details, 0, MaxDetails)
	}
}

// fail records err unless an earlier check failed.
func (c *checker) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// Validate checks and normalizes a registration.
func (in RegisterInput) Validate() (RegisterInput, error) {
	var c checker
	c.agent(&in.Slug, &in.DisplayName, &in.ModelSlug, &in.Capabilities, nil)
	c.optText("details", &in.Details, 0, MaxDetails)
	return in, c.err
}

// Validate checks and normalizes an agent creation.
func (in CreateAgentInput) Validate() (CreateAgentInput, error) {
	var c checker
	if c.agent(&in.Slug, &in.DisplayName, &in.ModelSlug, &in.Capabilities, &in.Details); c.err != nil {
		return in, c.err
	}
	switch in.Kind {
	case "":
		in.Kind = KindAgent
	case KindAgent, KindHuman:
	default:
		return in, Errorf(EInvalidRequest, "kind: must be \"agent\" or \"human\".")
	}
	return in, nil
}

// Validate checks and normalizes a profile edit.
func (in ProfileUpdate) Validate() (ProfileUpdate, error) {
	if in.DisplayName == nil && in.Details == nil {
		return in, Errorf(EInvalidRequest, "body: give displayName, details or both.")
	}
	var c checker
	c.optText("displayName", &in.DisplayName, 1, MaxShortText)
	c.optText("details", &in.Details, 0, MaxDetails)
	return in, c.err
}

// Validate checks and normalizes a new task. Slugs must already be resolved.
func (in PostTaskInput) Validate() (PostTaskInput, error) {
	var c checker
	c.slug("senderSlug", &in.SenderSlug)
	c.slug("recipientSlug", &in.RecipientSlug)
	c.text("title", &in.Title, 1, MaxShortText)
	c.text("instructions", &in.Instructions, 1, MaxLongText)
	c.caps("requiredCapabilities", &in.RequiredCapabilities, 0)
	c.priority("priority", &in.Priority)
	if in.ParentTaskID != "" {
		c.taskID("parentTaskId", &in.ParentTaskID)
	}
	if c.err == nil {
		in.TargetSession, c.err = TargetSession("targetSession", in.TargetSession)
	}
	if c.err == nil {
		in.ReplySession, c.err = LiveSessionID("session", in.ReplySession)
	}
	if c.err == nil && in.FromAgent && in.SenderSlug == in.RecipientSlug && in.TargetSession == "" {
		c.err = Errorf(ESelfTask,
			"%s cannot post a task to itself: do the work yourself. To hand it to one of your own sessions, name it in targetSession (a session id or exact session name).",
			in.SenderSlug).WithDetails(map[string]any{"agent": in.SenderSlug})
	}
	return in, c.err
}

// TargetSession trims s and checks it as a session id or name: empty, or
// 1..MaxTargetSession characters without control characters.
func TargetSession(field, s string) (string, error) {
	t, err := Text(field, s, 0, MaxTargetSession)
	if err != nil {
		return "", err
	}
	for _, r := range t {
		if unicode.IsControl(r) {
			return "", Errorf(EInvalidRequest, "%s: must be one line without control characters.", field)
		}
	}
	return t, nil
}

// Validate checks and normalizes a report.
func (in ReportInput) Validate() (ReportInput, error) {
	switch in.Kind {
	case ReportProgress, ReportCompleted, ReportBlocked:
	default:
		return in, Errorf(EInvalidRequest, "kind: must be progress, completed or blocked.")
	}
	var c checker
	c.taskID("taskId", &in.TaskID)
	c.text("message", &in.Message, 1, MaxLongText)
	c.text("result", &in.Result, 0, MaxResult)
	return in, c.err
}

// Validate checks and normalizes a claim: the recipient and the senders
// normalized, the lease in seconds (0 is DefaultLeaseSeconds), Via set
// (ViaChat when empty), the live session's id trimmed. A claim through a
// live session leaves the tasks aimed at the agent's other live sessions
// to them, like an unbound worker's: LeaveLiveSessions is set with Session.
// An empty non-nil FromSenders stays non-nil: it claims nothing.
func (in ClaimInput) Validate() (ClaimInput, error) {
	var err error
	if in.RecipientSlug, err = NormalizeSlug("recipientSlug", in.RecipientSlug); err != nil {
		return in, err
	}
	if in.LeaseSeconds, err = LeaseSeconds("leaseSeconds", in.LeaseSeconds); err != nil {
		return in, err
	}
	switch in.Via {
	case "":
		in.Via = ViaChat
	case ViaChat, ViaWorker:
	default:
		return in, Errorf(EInvalidRequest, "via: must be %q or %q.", ViaChat, ViaWorker)
	}
	if len(in.FromSenders) > MaxWorkerSenders {
		return in, Errorf(EInvalidRequest, "fromSenders: at most %d entries (got %d).", MaxWorkerSenders, len(in.FromSenders))
	}
	if len(in.ForSessions) > MaxClaimSessions {
		return in, Errorf(EInvalidRequest, "forSessions: at most %d entries (got %d).", MaxClaimSessions, len(in.ForSessions))
	}
	for _, s := range in.ForSessions {
		if len(s) > MaxTargetSession {
			return in, Errorf(EInvalidRequest, "forSessions: an entry is over %d bytes.", MaxTargetSession)
		}
	}
	if in.FromSenders != nil {
		senders := make([]string, 0, len(in.FromSenders))
		for _, s := range in.FromSenders {
			n, err := NormalizeSlug("fromSenders", s)
			if err != nil {
				return in, err
			}
			senders = append(senders, n)
		}
		in.FromSenders = senders
	}
	if in.Session, err = LiveSessionID("session", in.Session); err != nil {
		return in, err
	}
	in.LeaveLiveSessions = in.LeaveLiveSessions || in.Session != ""
	return in, nil
}

// Validate checks and normalizes an invite.
func (in InviteInput) Validate() (InviteInput, error) {
	var c checker
	c.text("label", &in.Label, 0, MaxLabel)
	if !(in.ExpiresInHours > 0 && in.ExpiresInHours <= MaxInviteHours) {
		c.fail(Errorf(EInvalidRequest, "expiresInHours: must be more than 0 and at most %d.", MaxInviteHours))
	}
	if in.MaxUses < 0 || in.MaxUses > MaxInviteUses {
		c.fail(Errorf(EInvalidRequest, "maxUses: must be 1..%d, or 0 for unlimited.", MaxInviteUses))
	}
	c.text("displayName", &in.DisplayName, 0, MaxShortText)
	c.text("role", &in.Role, 0, MaxDetails)
	if in.FirstTask != nil {
		ft := *in.FirstTask
		c.text("firstTask.title", &ft.Title, 1, MaxShortText)
		c.text("firstTask.instructions", &ft.Instructions, 1, MaxLongText)
		c.priority("firstTask.priority", &ft.Priority)
		in.FirstTask = &ft
	}
	return in, c.err
}

// Validate checks and normalizes an enrollment.
func (in EnrollInput) Validate() (EnrollInput, error) {
	var c checker
	c.text("invite", &in.Invite, 1, MaxInviteCode)
	c.agent(&in.Slug, &in.DisplayName, &in.ModelSlug, &in.Capabilities, &in.Details)
	return in, c.err
}

// isUUID reports whether s is a lowercase UUID,
// ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// TaskID checks that s is a task id (a UUID), lowercasing it.
func TaskID(field, s string) (string, error) {
	id := strings.ToLower(strings.TrimSpace(s))
	if id == "" {
		return "", Errorf(EInvalidRequest, "%s: is required.", field)
	}
	if !isUUID(id) {
		return "", Errorf(EInvalidRequest, "%s: must be a task id (a UUID).", field)
	}
	return id, nil
}
