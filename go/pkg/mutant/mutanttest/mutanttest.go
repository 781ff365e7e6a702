// Package mutanttest checks a plugin's mutant switches: each mutant name
// turns on exactly its own switch, passes mutant.Check and is announced by
// the banner; the correct build turns on none and announces nothing.
package mutanttest

import (
	"strings"
	"testing"

	"schedgate/pkg/mutant"
)

// Switches runs the check for plugin, whose switches are named in switches
// (a name of the test's choosing -> the switch) and whose mutants are cases
// (mutant name -> the name of the switch it must turn on).
func Switches(t *testing.T, plugin string, switches map[string]mutant.Switch, cases map[string]string) {
	t.Helper()
	cases[""] = "" // the correct build
	for m, on := range cases {
		t.Run("mutant="+m, func(t *testing.T) {
			t.Cleanup(mutant.SetForTest(m))
			for name, s := range switches {
				if got, want := s.On(), name == on; got != want {
					t.Errorf("%s.On() = %v, want %v", name, got, want)
				}
			}
			if err := mutant.Check(); err != nil {
				t.Errorf("Check with %q = %v", m, err)
			}
			banner := mutant.Banner()
			if m == "" && banner != "" {
				t.Errorf("the correct build announces %q", banner)
			}
			if m != "" && !strings.Contains(banner, "DELIBERATELY BROKEN BUILD: "+plugin+" mutant "+m+": ") {
				t.Errorf("banner of %s = %q", m, banner)
			}
		})
	}
	if n := len(mutant.Known(plugin)); n != len(switches) {
		t.Errorf("%d mutants defined for %s, %d switches tested", n, plugin, len(switches))
	}
}
