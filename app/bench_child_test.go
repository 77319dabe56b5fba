package app

import (
	"testing"
	"time"
)

func TestProcessCPUGrows(t *testing.T) {
	before, err := processCPU()
	if err != nil {
		t.Skipf("no /proc/self/stat: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for x := 0; ; x++ {
		after, err := processCPU()
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process CPU stayed at %v while spinning", after)
		}
		_ = x * x
	}
}
