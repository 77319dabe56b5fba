//go:build windows

package desktop

import (
	"fmt"

	"golang.org/x/sys/windows/registry"
)

// RegisterURLScheme makes exe the current user's handler of the app's URL
// scheme (crosschat-relay://, what a clicked toast opens) and registers the
// toasts' AppUserModelID, both under HKCU\Software\Classes, so it works
// for an installed and a copied exe alike. The uninstaller removes both.
func RegisterURLScheme(exe string) error {
	values := []struct{ key, name, value string }{
		{`Software\Classes\` + URLScheme, "", "URL:" + DisplayName},
		{`Software\Classes\` + URLScheme, "URL Protocol", ""},
		{`Software\Classes\` + URLScheme + `\DefaultIcon`, "", `"` + exe + `",0`},
		{`Software\Classes\` + URLScheme + `\shell\open\command`, "", `"` + exe + `" "%1"`},
		{`Software\Classes\AppUserModelId\` + ToastAppID, "DisplayName", DisplayName},
	}
	for _, v := range values {
		k, _, err := registry.CreateKey(registry.CURRENT_USER, v.key, registry.SET_VALUE)
		if err != nil {
			return fmt.Errorf("register %s:// : %w", URLScheme, err)
		}
		err = k.SetStringValue(v.name, v.value)
		k.Close()
		if err != nil {
			return fmt.Errorf("register %s:// : %w", URLScheme, err)
		}
	}
	return nil
}

// URLSchemeHandler is the command line registered for the app's URL scheme
// ("" when none is).
func URLSchemeHandler() (string, error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, `Software\Classes\`+URLScheme+`\shell\open\command`, registry.QUERY_VALUE)
	if err != nil {
		return "", nil
	}
	defer k.Close()
	v, _, err := k.GetStringValue("")
	if err != nil {
		return "", fmt.Errorf("read the %s:// handler: %w", URLScheme, err)
	}
	return v, nil
}
