package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

var (
	errorType   = reflect.TypeFor[error]()
	contextType = reflect.TypeFor[context.Context]()
)

// boundService is one entry of Config.Services with its methods resolved.
type boundService struct {
	name    string
	methods map[string]*boundMethod
}

// boundMethod is one exported method of a bound service.
type boundMethod struct {
	name string // "Service.Method", for logs
	fn   reflect.Value
	// params are the types of the JSON-decoded parameters.
	params []reflect.Type
	// shape is how results are read; unsupported shapes fail at call time.
	shape resultShape
}

// resultShape classifies a method's results.
type resultShape int

const (
	resultsNone          resultShape = iota // ()
	resultsValue                            // (T)
	resultsError                            // (error)
	resultsValueAndError                    // (T, error)
	resultsUnsupported                      // anything else, variadic, or taking a context
)

// bindServices resolves the exported methods of each bound service.
func bindServices(services map[string]any) (map[string]*boundService, error) {
	out := make(map[string]*boundService, len(services))
	for name, svc := range services {
		if !isIdentifier(name) {
			return nil, fmt.Errorf("web: Config.Services: %q is not a Go identifier", name)
		}
		if svc == nil || isNilValue(svc) {
			return nil, fmt.Errorf("web: Config.Services[%q] is nil", name)
		}
		v := reflect.ValueOf(svc)
		t := v.Type()
		bs := &boundService{name: name, methods: make(map[string]*boundMethod, t.NumMethod())}
		for i := 0; i < t.NumMethod(); i++ {
			m := t.Method(i)
			if !m.IsExported() {
				continue
			}
			bs.methods[m.Name] = newBoundMethod(name+"."+m.Name, v.Method(i))
		}
		out[name] = bs
	}
	return out, nil
}

// newBoundMethod reads a method's signature.
func newBoundMethod(name string, fn reflect.Value) *boundMethod {
	t := fn.Type()
	bm := &boundMethod{name: name, fn: fn}
	for i := 0; i < t.NumIn(); i++ {
		if t.In(i) == contextType {
			// The dashboard's methods take no context; one that does is
			// refused at call time.
			bm.params, bm.shape = nil, resultsUnsupported
			return bm
		}
		bm.params = append(bm.params, t.In(i))
	}
	switch {
	case t.IsVariadic():
		bm.shape = resultsUnsupported
	case t.NumOut() == 0:
		bm.shape = resultsNone
	case t.NumOut() == 1 && t.Out(0) == errorType:
		bm.shape = resultsError
	case t.NumOut() == 1:
		bm.shape = resultsValue
	case t.NumOut() == 2 && t.Out(1) == errorType:
		bm.shape = resultsValueAndError
	default:
		bm.shape = resultsUnsupported
	}
	return bm
}

// isIdentifier reports whether s is a Go identifier.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(unicode.IsLetter(r) || r == '_' || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

// serveBridge routes /bridge/*.
func (h *handler) serveBridge(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/bridge/")
	switch {
	case r.URL.Path == "/bridge" || r.URL.Path == "/bridge/":
		writeError(w, http.StatusNotFound, "not_found", "Nothing is served here.")
	case rest == "session":
		h.serveSession(w, r)
	case rest == "identity":
		h.serveIdentity(w, r)
	case rest == "events/ticket":
		h.serveTicket(w, r)
	case rest == "events":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		if t := r.URL.Query().Get("ticket"); t != "" {
			if !h.tickets.valid(t, h.now(), true) {
				writeError(w, http.StatusUnauthorized, relay.EUnauthorized, "Sign in with the admin token.")
				return
			}
		} else if !h.requireAdmin(w, r) {
			return
		}
		h.serveEvents(w, r)
	default:
		h.serveCall(w, r, rest)
	}
}

// serveCall handles POST /bridge/<Service>.<Method>.
func (h *handler) serveCall(w http.ResponseWriter, r *http.Request, target string) {
	svcName, methodName, ok := strings.Cut(target, ".")
	if !ok || strings.Contains(target, "/") {
		writeError(w, http.StatusNotFound, "not_found", "Nothing is served here.")
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	if !h.requireAdmin(w, r) {
		return
	}
	var m *boundMethod
	if svc := h.bridge[svcName]; svc != nil {
		m = svc.methods[methodName]
	}
	access := NotCallable
	if m != nil {
		access = h.access(svcName, methodName)
	}
	if access == NotCallable {
		writeError(w, http.StatusNotFound, "not_found", "There is no bound method "+quoteName(target)+".")
		return
	}
	if access != Remote && !isLocalRequest(r) {
		writeError(w, http.StatusForbidden, "local_only", "This action is only available from this computer.")
		return
	}
	body, err := h.readBody(w, r)
	if err != nil {
		writeBodyError(w, err)
		return
	}
	args, msg := decodeArgs(body, m.params)
	if args == nil {
		if msg == "" {
			writeInvalidJSON(w)
		} else {
			writeError(w, http.StatusBadRequest, relay.EInvalidRequest, msg)
		}
		return
	}
	result, err := h.call(r.Context(), m, args)
	if err != nil {
		h.writeDomainError(w, r, m.name, err)
		return
	}
	writeRawJSON(w, http.StatusOK, result)
}

// quoteName keeps a client-supplied name printable and short in messages.
func quoteName(s string) string {
	if len(s) > 100 || !utf8.ValidString(s) {
		return "(this name)"
	}
	return fmt.Sprintf("%q", s)
}

// decodeArgs decodes a JSON array of positional arguments into values of
// the parameter types. Missing trailing arguments are zero values. It
// returns nil and "" for a body that is not JSON, and nil and a message
// for any other problem.
func decodeArgs(body []byte, params []reflect.Type) ([]reflect.Value, string) {
	var raw []json.RawMessage
	if len(strings.TrimSpace(string(body))) > 0 {
		if !json.Valid(body) {
			return nil, ""
		}
		if err := json.Unmarshal(body, &raw); err != nil {
			return nil, "body: must be a JSON array of arguments."
		}
	}
	if len(raw) > len(params) {
		return nil, fmt.Sprintf("body: this method takes %d arguments (got %d).", len(params), len(raw))
	}
	args := make([]reflect.Value, len(params))
	for i, pt := range params {
		pv := reflect.New(pt)
		if i < len(raw) {
			if err := json.Unmarshal(raw[i], pv.Interface()); err != nil {
				return nil, jsonFieldError(fmt.Sprintf("args[%d]", i), err)
			}
		}
		args[i] = pv.Elem()
	}
	return args, ""
}

// call invokes m and encodes its value result as JSON (null when there is
// none). The returned error is the method's own error, or an internal
// error for an unsupported signature or an unencodable result.
func (h *handler) call(ctx context.Context, m *boundMethod, args []reflect.Value) ([]byte, error) {
	if m.shape == resultsUnsupported {
		return nil, fmt.Errorf("bridge %s: unsupported signature %s (want (T, error), (error), (T) or ())", m.name, m.fn.Type())
	}
	out := m.fn.Call(args)
	var value any
	switch m.shape {
	case resultsValue:
		value = out[0].Interface()
	case resultsError:
		if err, _ := out[0].Interface().(error); err != nil {
			return nil, err
		}
	case resultsValueAndError:
		if err, _ := out[1].Interface().(error); err != nil {
			return nil, err
		}
		value = out[0].Interface()
	}
	b, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: encode result: %w", m.name, err)
	}
	return b, nil
}
