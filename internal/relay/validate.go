package relay

import (
	"regexp"
	"sort"
	"strings"
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

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{1,79}$`)

// NormalizeSlug trims and lowercases s and checks it against the slug rule:
// 2–80 characters, lowercase letters, digits, dots, underscores, colons and
// hyphens, starting with a letter or digit.
func NormalizeSlug(field, s string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(s))
	if !slugPattern.MatchString(n) {
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

// Validate checks and normalizes a registration.
func (in RegisterInput) Validate() (RegisterInput, error) {
	var err error
	if in.Slug, err = NormalizeSlug("slug", in.Slug); err != nil {
		return in, err
	}
	if in.DisplayName, err = Text("displayName", in.DisplayName, 1, MaxShortText); err != nil {
		return in, err
	}
	if in.ModelSlug, err = Text("modelSlug", in.ModelSlug, 1, MaxShortText); err != nil {
		return in, err
	}
	if in.Capabilities, err = Capabilities("capabilities", in.Capabilities, 1); err != nil {
		return in, err
	}
	if in.Details != nil {
		d, err := Text("details", *in.Details, 0, MaxDetails)
		if err != nil {
			return in, err
		}
		in.Details = &d
	}
	return in, nil
}

// Validate checks and normalizes an agent creation.
func (in CreateAgentInput) Validate() (CreateAgentInput, error) {
	reg, err := RegisterInput{Slug: in.Slug, DisplayName: in.DisplayName, ModelSlug: in.ModelSlug, Capabilities: in.Capabilities, Details: &in.Details}.Validate()
	if err != nil {
		return in, err
	}
	in.Slug, in.DisplayName, in.ModelSlug, in.Capabilities, in.Details = reg.Slug, reg.DisplayName, reg.ModelSlug, reg.Capabilities, *reg.Details
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
	if in.DisplayName != nil {
		n, err := Text("displayName", *in.DisplayName, 1, MaxShortText)
		if err != nil {
			return in, err
		}
		in.DisplayName = &n
	}
	if in.Details != nil {
		d, err := Text("details", *in.Details, 0, MaxDetails)
		if err != nil {
			return in, err
		}
		in.Details = &d
	}
	return in, nil
}

// Validate checks and normalizes a new task. Slugs must already be resolved.
func (in PostTaskInput) Validate() (PostTaskInput, error) {
	var err error
	if in.SenderSlug, err = NormalizeSlug("senderSlug", in.SenderSlug); err != nil {
		return in, err
	}
	if in.RecipientSlug, err = NormalizeSlug("recipientSlug", in.RecipientSlug); err != nil {
		return in, err
	}
	if in.Title, err = Text("title", in.Title, 1, MaxShortText); err != nil {
		return in, err
	}
	if in.Instructions, err = Text("instructions", in.Instructions, 1, MaxLongText); err != nil {
		return in, err
	}
	if in.RequiredCapabilities, err = Capabilities("requiredCapabilities", in.RequiredCapabilities, 0); err != nil {
		return in, err
	}
	if in.Priority, err = Priority("priority", in.Priority); err != nil {
		return in, err
	}
	if in.ParentTaskID != "" {
		if in.ParentTaskID, err = TaskID("parentTaskId", in.ParentTaskID); err != nil {
			return in, err
		}
	}
	return in, nil
}

// Validate checks and normalizes a report.
func (in ReportInput) Validate() (ReportInput, error) {
	var err error
	switch in.Kind {
	case ReportProgress, ReportCompleted, ReportBlocked:
	default:
		return in, Errorf(EInvalidRequest, "kind: must be progress, completed or blocked.")
	}
	if in.TaskID, err = TaskID("taskId", in.TaskID); err != nil {
		return in, err
	}
	if in.Message, err = Text("message", in.Message, 1, MaxLongText); err != nil {
		return in, err
	}
	if in.Result, err = Text("result", in.Result, 0, MaxResult); err != nil {
		return in, err
	}
	return in, nil
}

// Validate checks and normalizes an invite.
func (in InviteInput) Validate() (InviteInput, error) {
	var err error
	if in.Label, err = Text("label", in.Label, 0, MaxLabel); err != nil {
		return in, err
	}
	if !(in.ExpiresInHours > 0 && in.ExpiresInHours <= MaxInviteHours) {
		return in, Errorf(EInvalidRequest, "expiresInHours: must be more than 0 and at most %d.", MaxInviteHours)
	}
	if in.MaxUses < 0 || in.MaxUses > MaxInviteUses {
		return in, Errorf(EInvalidRequest, "maxUses: must be 1..%d, or 0 for unlimited.", MaxInviteUses)
	}
	if in.DisplayName, err = Text("displayName", in.DisplayName, 0, MaxShortText); err != nil {
		return in, err
	}
	if in.Role, err = Text("role", in.Role, 0, MaxDetails); err != nil {
		return in, err
	}
	if in.FirstTask != nil {
		ft := *in.FirstTask
		if ft.Title, err = Text("firstTask.title", ft.Title, 1, MaxShortText); err != nil {
			return in, err
		}
		if ft.Instructions, err = Text("firstTask.instructions", ft.Instructions, 1, MaxLongText); err != nil {
			return in, err
		}
		if ft.Priority, err = Priority("firstTask.priority", ft.Priority); err != nil {
			return in, err
		}
		in.FirstTask = &ft
	}
	return in, nil
}

// Validate checks and normalizes an enrollment.
func (in EnrollInput) Validate() (EnrollInput, error) {
	var err error
	if in.Invite, err = Text("invite", in.Invite, 1, MaxInviteCode); err != nil {
		return in, err
	}
	d := in.Details
	reg, err := RegisterInput{Slug: in.Slug, DisplayName: in.DisplayName, ModelSlug: in.ModelSlug, Capabilities: in.Capabilities, Details: &d}.Validate()
	if err != nil {
		return in, err
	}
	in.Slug, in.DisplayName, in.ModelSlug, in.Capabilities, in.Details = reg.Slug, reg.DisplayName, reg.ModelSlug, reg.Capabilities, *reg.Details
	return in, nil
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TaskID checks that s is a task id (a UUID), lowercasing it.
func TaskID(field, s string) (string, error) {
	id := strings.ToLower(strings.TrimSpace(s))
	if !uuidPattern.MatchString(id) {
		return "", Errorf(EInvalidRequest, "%s: must be a task id (a UUID).", field)
	}
	return id, nil
}
