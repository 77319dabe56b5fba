package shell

import (
	"testing"

	"github.com/wailsapp/wails/v2/pkg/options/linux"
)

// TestLinuxWebviewWithoutGPU: the window's webview draws without hardware
// acceleration (linuxOptions says why); the zero value would turn it on.
func TestLinuxWebviewWithoutGPU(t *testing.T) {
	o := linuxOptions([]byte("png"))
	if o.WebviewGpuPolicy != linux.WebviewGpuPolicyNever {
		t.Errorf("WebviewGpuPolicy %d, want WebviewGpuPolicyNever (%d)", o.WebviewGpuPolicy, linux.WebviewGpuPolicyNever)
	}
	if string(o.Icon) != "png" || o.ProgramName != "crosschat-relay" {
		t.Errorf("options %+v lost the icon or the program name", o)
	}
}
