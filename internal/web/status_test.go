package web_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// Ensures each domain error code answers with its HTTP status, wrapped or
// not, and anything else with 500.
func TestHTTPStatus(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{relay.Errorf(relay.EInvalidRequest, "x"), http.StatusBadRequest},
		{relay.Errorf(relay.EUnauthorized, "x"), http.StatusUnauthorized},
		{relay.Errorf(relay.EIdentityMismatch, "x"), http.StatusForbidden},
		{relay.Errorf(relay.ESlugRequired, "x"), http.StatusBadRequest},
		{relay.Errorf(relay.EUnknownAgent, "x"), http.StatusNotFound},
		{relay.Errorf(relay.EUnknownTask, "x"), http.StatusNotFound},
		{relay.Errorf(relay.EUnknownInvite, "x"), http.StatusNotFound},
		{relay.Errorf(relay.EUnknownWorker, "x"), http.StatusNotFound},
		{relay.Errorf(relay.ETaskAccessDenied, "x"), http.StatusForbidden},
		{relay.Errorf(relay.EChainLimit, "x"), http.StatusConflict},
		{relay.Errorf(relay.ERecipientLacksCapability, "x"), http.StatusConflict},
		{relay.Errorf(relay.ETaskUpdateDenied, "x"), http.StatusConflict},
		{relay.Errorf(relay.ETaskCancelDenied, "x"), http.StatusForbidden},
		{relay.Errorf(relay.ETaskRequeueDenied, "x"), http.StatusForbidden},
		{relay.Errorf(relay.ETaskChangesDenied, "x"), http.StatusForbidden},
		{relay.Errorf(relay.EInvalidTaskState, "x"), http.StatusConflict},
		{relay.Errorf(relay.EAgentExists, "x"), http.StatusConflict},
		{relay.Errorf(relay.EInvalidInvite, "x"), http.StatusForbidden},
		{relay.Errorf(relay.EInvalidAgentKind, "x"), http.StatusConflict},
		{relay.Errorf(relay.EOperatorProtected, "x"), http.StatusConflict},
		{relay.Errorf(relay.EAgentHasOpenTasks, "x"), http.StatusConflict},
		{relay.Errorf(relay.ETooManyOpenTasks, "x"), http.StatusTooManyRequests},
		{relay.Errorf(relay.ESessionNotFound, "x"), http.StatusNotFound},
		{relay.Errorf(relay.ESessionAmbiguous, "x"), http.StatusConflict},
		{relay.Errorf(relay.EInternal, "x"), http.StatusInternalServerError},
		{fmt.Errorf("store: %w", relay.Errorf(relay.EUnknownTask, "x")), http.StatusNotFound},
		{relay.Errorf("some_new_code", "x"), http.StatusInternalServerError},
		{errors.New("disk full"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := web.HTTPStatus(tt.err); got != tt.want {
				t.Fatalf("HTTPStatus = %d, want %d", got, tt.want)
			}
		})
	}
}

// Ensures every error code the domain declares (a string constant named
// E… in internal/relay) has a status of its own: a code left out of the
// table would answer 500, as if the relay had failed.
func TestEveryDomainCodeHasAStatus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "relay", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	codes := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if len(name.Name) < 2 || name.Name[0] != 'E' || name.Name[1] < 'A' || name.Name[1] > 'Z' || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					code, _ := strconv.Unquote(lit.Value)
					codes++
					got := web.HTTPStatus(relay.Errorf(code, "x"))
					if code != relay.EInternal && got == http.StatusInternalServerError {
						t.Errorf("%s (%q) answers 500: give it a status in statusByCode", name.Name, code)
					}
				}
			}
		}
	}
	if codes < 20 {
		t.Fatalf("found %d codes in internal/relay; is the walk broken?", codes)
	}
}
