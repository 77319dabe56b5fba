package app

import (
	"os"
	"path/filepath"
	"testing"
)

// Ensure the self-test report is written only in self-test mode.
func TestReportSelfTest(t *testing.T) {
	s := SelfTest{}
	t.Setenv(SelfTestEnv, "")
	if len(SelfTestBind()) != 0 {
		t.Fatal("SelfTest bound outside self-test mode")
	}
	if err := s.Report("x"); err == nil {
		t.Fatal("want an error outside self-test mode")
	}
	out := filepath.Join(t.TempDir(), "report.txt")
	t.Setenv(SelfTestEnv, out)
	if len(SelfTestBind()) != 1 {
		t.Fatal("SelfTest not bound in self-test mode")
	}
	if err := s.Report("Tasks\nNeeds attention 2"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "Tasks\nNeeds attention 2" {
		t.Fatalf("report %q", b)
	}
}
